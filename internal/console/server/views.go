package server

import (
	"net/http"
	"sort"
	"time"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/report"
)

// overview answers every DR namespace the user can see, with a summary.
func (s *Server) overview(w http.ResponseWriter, r request) {
	snap, err := s.read(r.Context(), r.client)
	if err != nil {
		e := toAPIError(err)
		writeJSON(w, e.Code, e)
		return
	}
	writeJSON(w, http.StatusOK, buildOverview(snap, s.opts.Now()))
}

func buildOverview(snap *snapshot, now time.Time) overviewView {
	byNS := map[string]*namespaceView{}
	var order []string
	nsOf := func(name string) *namespaceView {
		if v, ok := byNS[name]; ok {
			return v
		}
		v := &namespaceView{Name: name, Zones: []zoneView{}, Groups: []groupView{}, RPOEvents: []rpoView{}, Unfinished: []operationView{}}
		byNS[name] = v
		order = append(order, name)
		return v
	}
	for i := range snap.zones {
		z := &snap.zones[i]
		nsOf(z.Namespace).Zones = append(nsOf(z.Namespace).Zones, zoneOf(z))
	}
	var sum summary
	for i := range snap.groups {
		g := groupOf(&snap.groups[i], snap, now)
		nsOf(g.Namespace).Groups = append(nsOf(g.Namespace).Groups, g)
		sum.Groups++
		sum.ProtectedVMs += g.VMs
		if g.AtRisk {
			sum.GroupsAtRisk++
		}
	}
	for i := range snap.rpo {
		if e := rpoOf(&snap.rpo[i]); e.State != string(srv1alpha1.RPOEventResolved) {
			nsOf(e.Namespace).RPOEvents = append(nsOf(e.Namespace).RPOEvents, e)
			sum.OpenRPOEvents++
		}
	}
	for _, o := range operationsOf(snap, now, func(o operationView) bool { return !o.Finished }) {
		nsOf(o.Namespace).Unfinished = append(nsOf(o.Namespace).Unfinished, o)
		sum.UnfinishedRequests++
	}
	for ns, h := range snap.hidden {
		if ns != "*" {
			nsOf(ns).Hidden = h
		}
	}
	sort.Strings(order)
	out := overviewView{Summary: sum, Namespaces: []namespaceView{}}
	for _, ns := range order {
		v := byNS[ns]
		if h := snap.hidden["*"]; h != nil {
			v.Hidden = h
		}
		sort.Slice(v.Groups, func(i, j int) bool { return v.Groups[i].Name < v.Groups[j].Name })
		out.Namespaces = append(out.Namespaces, *v)
	}
	return out
}

// operations answers every request the user can see, newest first.
func (s *Server) operations(w http.ResponseWriter, r request) {
	snap, err := s.read(r.Context(), r.client)
	if err != nil {
		e := toAPIError(err)
		writeJSON(w, e.Code, e)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"operations": operationsOf(snap, s.opts.Now(), nil)})
}

type groupDetail struct {
	Group       groupView                            `json:"group"`
	Zone        *zoneView                            `json:"zone,omitempty"`
	VMs         []srv1alpha1.VMStatus                `json:"vms"`
	Sites       []srv1alpha1.ClusterGroupState       `json:"sites"`
	Replication []srv1alpha1.VMReplicationState      `json:"replication"`
	Operations  []operationView                      `json:"operations"`
	RPOEvents   []rpoView                            `json:"rpoEvents"`
	Members     []srv1alpha1.VirtualMachineReference `json:"members"`
	Notes       []string                             `json:"notes,omitempty"`
	// Boot is the group's boot plan, its implicit stage last.
	Boot *bootPlanView `json:"boot,omitempty"`
	// Drill is the group's drill schedule and its drills; none without one.
	Drill       *report.DrillSchedule `json:"drill,omitempty"`
	Consistency consistencyView       `json:"consistency"`
	// zone is the group's zone as the user read it, for the reads of its
	// clusters.
	zone *srv1alpha1.ProtectionZone
}

func (s *Server) group(w http.ResponseWriter, r request) {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	d, ok := s.groupDetail(w, r, ns, name)
	if ok {
		writeJSON(w, http.StatusOK, d)
	}
}

func (s *Server) groupDetail(w http.ResponseWriter, r request, ns, name string) (*groupDetail, bool) {
	snap, err := s.read(r.Context(), r.client)
	if err != nil {
		e := toAPIError(err)
		writeJSON(w, e.Code, e)
		return nil, false
	}
	var g *srv1alpha1.ProtectionGroup
	for i := range snap.groups {
		if snap.groups[i].Namespace == ns && snap.groups[i].Name == name {
			g = &snap.groups[i]
		}
	}
	if g == nil {
		writeJSON(w, http.StatusNotFound, apiError{Code: http.StatusNotFound, Message: "no protection group " + ns + "/" + name + " that you may read"})
		return nil, false
	}
	now := s.opts.Now()
	d := &groupDetail{Group: groupOf(g, snap, now), VMs: g.Status.VirtualMachines, Sites: g.Status.Clusters,
		Members: g.Spec.VirtualMachines, Notes: snap.hidden[ns], Boot: bootPlanOf(g.Spec.Boot),
		Drill: report.DrillScheduleOf(g), Consistency: consistencyOf(g)}
	if d.VMs == nil {
		d.VMs = []srv1alpha1.VMStatus{}
	}
	if d.Sites == nil {
		d.Sites = []srv1alpha1.ClusterGroupState{}
	}
	d.Replication = []srv1alpha1.VMReplicationState{}
	if rgs := statusFor(snap, ns, name); rgs != nil {
		d.Replication = rgs.Status.VirtualMachines
	} else {
		d.Notes = append(d.Notes, "no replication status for this group yet: per-volume state appears once the monitor reports it")
	}
	if z := zoneNamed(snap, ns, d.Group.Zone); z != nil {
		zv := zoneOf(z)
		d.Zone, d.zone = &zv, z
	}
	d.Operations = operationsOf(snap, now, func(o operationView) bool { return o.Namespace == ns && o.Group == name })
	d.RPOEvents = []rpoView{}
	for i := range snap.rpo {
		if e := &snap.rpo[i]; e.Namespace == ns && e.Spec.ProtectionGroupRef.Name == name {
			d.RPOEvents = append(d.RPOEvents, rpoOf(e))
		}
	}
	sort.Slice(d.RPOEvents, func(i, j int) bool { return d.RPOEvents[i].Start.After(d.RPOEvents[j].Start) })
	return d, true
}
