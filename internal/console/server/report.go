package server

import (
	"net/http"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/report"
)

// reportWindows are the windows the report page offers, as `kubectl
// siterecovery report --window` spells them.
var reportWindows = map[string]time.Duration{"24h": 24 * time.Hour, "7d": 7 * 24 * time.Hour, "30d": 30 * 24 * time.Hour}

// reportView is a DR namespace's compliance report (internal/report) with
// the window it covers; its notes say what the user may not read.
type reportView struct {
	report.Report
	Window  string   `json:"window"`
	Windows []string `json:"windows"`
}

// report answers the compliance report of a DR namespace over a window
// (query "window": 24h, 7d or 30d; default 7d), read with the user's token:
// a group, RPOEvent, test, request or DRPlacementControl the user may not
// list is not in it, and the notes say so.
func (s *Server) report(w http.ResponseWriter, r request) {
	ns := r.PathValue("ns")
	window := r.URL.Query().Get("window")
	if window == "" {
		window = "7d"
	}
	d, ok := reportWindows[window]
	if !ok {
		writeJSON(w, http.StatusBadRequest, apiError{Code: http.StatusBadRequest, Message: "window must be one of 24h, 7d or 30d"})
		return
	}
	snap, err := s.read(r.Context(), r.client)
	if err != nil {
		e := toAPIError(err)
		writeJSON(w, e.Code, e)
		return
	}
	now := s.opts.Now()
	in := report.Input{Namespace: ns, From: now.Add(-d), To: now, Now: now,
		Groups:        inNamespace(snap.groups, ns, func(g *srv1alpha1.ProtectionGroup) string { return g.Namespace }),
		Events:        inNamespace(snap.rpo, ns, func(e *srv1alpha1.RPOEvent) string { return e.Namespace }),
		TestFailovers: inNamespace(snap.tests, ns, func(t *srv1alpha1.TestFailover) string { return t.Namespace }),
		Requests:      inNamespace(snap.failover, ns, func(f *srv1alpha1.FailoverRequest) string { return f.Namespace }),
		Notes:         snap.hidden[ns]}
	if len(in.Groups) == 0 && !slices.ContainsFunc(snap.zones, func(z srv1alpha1.ProtectionZone) bool { return z.Namespace == ns }) {
		writeJSON(w, http.StatusNotFound, apiError{Code: http.StatusNotFound, Message: "no DR namespace " + ns + " that you may read"})
		return
	}
	// Only this page reads DRPCs, so they are listed here, not in the
	// snapshot every page waits for. Without their CRD there are none.
	drpcs := &drv1alpha1.DRPlacementControlList{}
	switch err := r.client.List(r.Context(), drpcs, client.InNamespace(ns)); {
	case apierrors.IsForbidden(err):
		in.Notes = append(in.Notes, report.DRPCsHiddenNote)
	case apierrors.IsNotFound(err):
	case err != nil:
		e := toAPIError(err)
		writeJSON(w, e.Code, e)
		return
	default:
		in.DRPCs = drpcs.Items
	}
	v := reportView{Report: report.Build(in), Window: window, Windows: []string{"24h", "7d", "30d"}}
	writeJSON(w, http.StatusOK, v)
}

func inNamespace[T any](items []T, ns string, nsOf func(*T) string) []T {
	var out []T
	for i := range items {
		if nsOf(&items[i]) == ns {
			out = append(out, items[i])
		}
	}
	return out
}
