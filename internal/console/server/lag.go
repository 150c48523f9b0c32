package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// PrometheusOptions point the console at the Prometheus that scrapes
// quorum-manager, for the lag history of each group.
type PrometheusOptions struct {
	// URL of Prometheus's HTTP API root, for example https://prometheus.monitoring:9090.
	URL string
	// BearerTokenFile, when set, holds the token sent to Prometheus; it is
	// read at each query, so a rotated token is picked up.
	BearerTokenFile string
	// CAFile, when set, is the CA bundle that Prometheus's certificate is checked against.
	CAFile string
}

// groupLagMetric is quorum-manager's gauge of a group's largest lag; the
// scrape adds the namespace label of the quorum-manager that exports it,
// which is its DR namespace.
const groupLagMetric = "siterecovery_replication_group_lag_seconds"

// lagHistoryMaxHours bounds the window a page may ask for.
const lagHistoryMaxHours = 24

type lagView struct {
	// Source is "prometheus" or "console" (samples this console took).
	Source           string      `json:"source"`
	From             time.Time   `json:"from"`
	To               time.Time   `json:"to"`
	ObjectiveSeconds int32       `json:"objectiveSeconds"`
	Samples          []lagSample `json:"samples"`
	// Since is, for console samples, when the console began sampling.
	Since *time.Time `json:"since,omitempty"`
	// Note says what is missing from the samples.
	Note string `json:"note,omitempty"`
}

// lag answers a group's replication lag over the last hours (query "hours",
// 1 to 24, default 6), for a user who may read the group's
// ReplicationGroupStatus: the console reads it with the user's token first,
// so neither Prometheus nor its own samples show a group the user could not
// read with kubectl.
func (s *Server) lag(w http.ResponseWriter, r request) {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	hours := 6
	if h := r.URL.Query().Get("hours"); h != "" {
		n, err := strconv.Atoi(h)
		if err != nil || n < 1 || n > lagHistoryMaxHours {
			writeJSON(w, http.StatusBadRequest, apiError{Code: http.StatusBadRequest, Message: fmt.Sprintf("hours must be a whole number from 1 to %d", lagHistoryMaxHours)})
			return
		}
		hours = n
	}
	var st srv1alpha1.ReplicationGroupStatus
	if err := r.client.Get(r.Context(), client.ObjectKey{Namespace: ns, Name: name}, &st); err != nil {
		e := toAPIError(err)
		if apierrors.IsNotFound(err) {
			e.Message = "no replication status for group " + ns + "/" + name + " yet: its lag appears once the monitor reports it"
		}
		writeJSON(w, e.Code, e)
		return
	}
	now := s.opts.Now()
	s.lagSamples.recordAll([]srv1alpha1.ReplicationGroupStatus{st}, now)
	v := lagView{From: now.Add(-time.Duration(hours) * time.Hour), To: now, ObjectiveSeconds: st.Spec.RPOObjectiveSeconds}
	if p := s.opts.Prometheus; p != nil && p.URL != "" {
		samples, err := queryLag(r.Context(), p, ns, groupOfStatus(&st), v.From, now)
		if err == nil {
			v.Source, v.Samples = "prometheus", samples
			writeJSON(w, http.StatusOK, v)
			return
		}
		s.opts.Log.Warn("lag history from Prometheus", "namespace", ns, "group", name, "error", err.Error())
		v.Note = "Prometheus did not answer (" + err.Error() + "); showing the samples the console took instead. "
	}
	samples, since := s.lagSamples.window(ns, groupOfStatus(&st), v.From)
	v.Source, v.Samples = "console", samples
	if since.After(v.From) {
		v.Since = &since
		v.Note += "The console samples the lag each time the group is read; point it at Prometheus (console.prometheus.url) for the full history."
	}
	writeJSON(w, http.StatusOK, v)
}

// queryLag asks Prometheus for the group's lag between from and to, in about
// 240 steps.
func queryLag(ctx context.Context, p *PrometheusOptions, ns, group string, from, to time.Time) ([]lagSample, error) {
	hc, err := prometheusClient(p)
	if err != nil {
		return nil, err
	}
	defer hc.CloseIdleConnections()
	step := max(to.Sub(from)/240, 15*time.Second)
	q := url.Values{
		"query": {fmt.Sprintf(`max(%s{namespace=%q,protection_group=%q})`, groupLagMetric, ns, group)},
		"start": {strconv.FormatInt(from.Unix(), 10)},
		"end":   {strconv.FormatInt(to.Unix(), 10)},
		"step":  {strconv.FormatInt(int64(step/time.Second), 10)},
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(p.URL, "/")+"/api/v1/query_range?"+q.Encode(), http.NoBody)
	if err != nil {
		return nil, errors.New("the Prometheus URL does not parse")
	}
	if p.BearerTokenFile != "" {
		tok, err := os.ReadFile(p.BearerTokenFile)
		if err != nil {
			return nil, errors.New("the Prometheus token file cannot be read")
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, errors.New("cannot reach Prometheus")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("answer %s from Prometheus", resp.Status)
	}
	var body struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Values [][2]json.RawMessage `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Status != "success" {
		return nil, errors.New("the answer of Prometheus is not a query result")
	}
	out := []lagSample{}
	for _, series := range body.Data.Result {
		for _, pair := range series.Values {
			var at float64
			var val string
			if json.Unmarshal(pair[0], &at) != nil || json.Unmarshal(pair[1], &val) != nil {
				return nil, errors.New("the answer of Prometheus is not a query result")
			}
			f, err := strconv.ParseFloat(val, 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				continue // no sample at that step
			}
			out = append(out, lagSample{At: time.Unix(int64(at), 0).UTC(), Seconds: int64(f)})
		}
	}
	return out, nil
}

func prometheusClient(p *PrometheusOptions) (*http.Client, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if p.CAFile != "" {
		pem, err := os.ReadFile(p.CAFile)
		if err != nil {
			return nil, errors.New("the Prometheus CA file cannot be read")
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, errors.New("the Prometheus CA file holds no PEM certificate")
		}
		t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: t, Timeout: 10 * time.Second}, nil
}
