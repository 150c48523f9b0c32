package steadystate

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siterecovery/siterecovery/test/harness"
)

// BenchmarkTenants measures what a DR namespace costs the workload clusters
// and itself, against what they hold and how many DR namespaces share them.
// Every quorum-manager is the real binary, one per DR namespace, as the
// charts install it; pg-controller runs once per workload cluster.
//
// Case "unrelated": two DR namespaces of 100 protected VMs each, dr-clean on
// the zone-a pair and dr-busy on the zone-b pair, whose clusters also hold
// TENANT_UNRELATED_PVCS (10,000) PVCs and TENANT_UNRELATED_VMS (2,000) VMs
// of nobody's. Both quorum-managers run and are measured over the same
// window, so the pair is interleaved by construction. Reported per DR
// namespace: RSS, the objects its caches hold, the watch events its caches
// received since it started (the initial lists included) and per idle minute;
// and the ratio busy over clean.
//
// Case "shared": TENANTS (50) DR namespaces of 20 VMs each share the zone-a
// pair; their quorum-managers start in steps (TENANT_STEPS: 1, 10, 50). After
// each step and a quiet window, one idle minute (TENANT_IDLE) gives per DR
// namespace the mean and largest RSS, the events its caches received, and
// for the pair's two API servers their CPU and the watch events they sent,
// per minute, in total and per DR namespace.
//
// Case "failover": the first DR namespace's first group (10 VMs) fails over
// and back with the other DR namespaces' quorum-managers running, then with
// them stopped, in turns; reported are the medians and their ratio.
//
//	go test ./test/steadystate -run '^$' -bench Tenants -benchtime 1x -timeout 120m -v
func BenchmarkTenants(b *testing.B) {
	ctx := context.Background()
	idle := envDuration(b, "TENANT_IDLE", time.Minute)
	f := newFleet(b, "")

	clean := tenant{drNamespace: "dr-clean", appNS: "apps-clean", zone: "clean", pair: "zone-a", groups: 10, vmsPerGroup: 10}
	busy := tenant{drNamespace: "dr-busy", appNS: "apps-busy", zone: "busy", pair: "zone-b", groups: 10, vmsPerGroup: 10}
	f.seed(ctx, []tenant{clean, busy})
	for _, c := range []string{primaryOf("zone-b"), drOf("zone-b")} {
		f.unrelated(ctx, c, envInt(b, "TENANT_UNRELATED_PVCS", 10000), envInt(b, "TENANT_UNRELATED_VMS", 2000))
	}
	f.startWorkload()
	f.protect(ctx, []tenant{clean, busy})
	managers := map[string]*quorumManager{}
	for _, tn := range []tenant{clean, busy} {
		managers[tn.drNamespace] = f.startMeasuredQuorum(tn.drNamespace)
	}
	f.settle(ctx)
	w := f.measure(ctx, idle, []string{"zone-a-primary", "zone-b-primary"}, managers)
	for _, name := range []string{"dr-clean", "dr-busy"} {
		m := w.managers[name]
		short := strings.TrimPrefix(name, "dr-")
		b.ReportMetric(m.rssMiB, "unrelated-"+short+"-rss-MiB")
		b.ReportMetric(m.cached, "unrelated-"+short+"-cached-objects")
		b.ReportMetric(m.eventsTotal, "unrelated-"+short+"-events-since-start")
		b.ReportMetric(m.eventsPerMin, "unrelated-"+short+"-idle-events/min")
	}
	b.ReportMetric(w.managers["dr-busy"].rssMiB/w.managers["dr-clean"].rssMiB, "unrelated-rss-busy/clean")
	b.ReportMetric(w.managers["dr-busy"].eventsTotal-w.managers["dr-clean"].eventsTotal, "unrelated-extra-events")
	for _, c := range []string{"zone-a-primary", "zone-b-primary"} {
		b.ReportMetric(w.apiCPU[c], "unrelated-"+c+"-apiserver-cpu-s/min")
	}
	for _, m := range managers {
		m.stop()
	}

	n := envInt(b, "TENANTS", 50)
	tenants := make([]tenant, n)
	for i := range tenants {
		tenants[i] = tenant{drNamespace: fmt.Sprintf("dr-t%02d", i), appNS: fmt.Sprintf("apps-t%02d", i), zone: fmt.Sprintf("t%02d", i),
			pair: "zone-a", groups: 2, vmsPerGroup: 10}
	}
	began := time.Now()
	f.seed(ctx, tenants)
	f.protect(ctx, tenants)
	b.Logf("%d DR namespaces of 20 VMs protected in %s", n, time.Since(began).Round(time.Second))
	running := map[string]*quorumManager{}
	pair := []string{"zone-a-primary", "zone-a-dr"}
	for _, step := range envInts(b, "TENANT_STEPS", []int{1, 10, n}) {
		for _, tn := range tenants[:min(step, n)] {
			if running[tn.drNamespace] == nil {
				running[tn.drNamespace] = f.startMeasuredQuorum(tn.drNamespace)
			}
		}
		f.settle(ctx)
		w := f.measure(ctx, idle, pair, running)
		var rss, maxRSS, events, cached float64
		for _, m := range w.managers {
			rss += m.rssMiB
			maxRSS = max(maxRSS, m.rssMiB)
			events += m.eventsTotal
			cached += m.cached
		}
		k := float64(len(w.managers))
		prefix := fmt.Sprintf("shared-%02d-", len(w.managers))
		b.ReportMetric(rss/k, prefix+"rss-MiB/ns")
		b.ReportMetric(maxRSS, prefix+"max-rss-MiB")
		b.ReportMetric(cached/k, prefix+"cached-objects/ns")
		b.ReportMetric(events/k, prefix+"events-since-start/ns")
		cpu, sent := 0.0, 0.0
		for _, c := range pair {
			cpu += w.apiCPU[c]
			sent += w.watchEventsSent[c]
		}
		b.ReportMetric(cpu, prefix+"apiserver-cpu-s/min")
		b.ReportMetric(sent, prefix+"apiserver-watch-events/min")
		b.ReportMetric(sent/k, prefix+"apiserver-watch-events/min/ns")
	}

	// A planned failover and failback of the first DR namespace's first
	// group, with every other DR namespace's quorum-manager running, then
	// with none, in turns (TENANT_FAILOVER_ROUNDS pairs).
	first := tenants[0]
	group := first.zone + "-g00"
	var with, alone []float64
	for round := range envInt(b, "TENANT_FAILOVER_ROUNDS", 2) {
		for _, withOthers := range []bool{true, false} {
			for _, tn := range tenants[1:] {
				switch m := running[tn.drNamespace]; {
				case withOthers && m == nil:
					running[tn.drNamespace] = f.startMeasuredQuorum(tn.drNamespace)
				case !withOthers && m != nil:
					m.stop()
					delete(running, tn.drNamespace)
				}
			}
			f.settle(ctx)
			over, back, err := f.failoverRound(ctx, first, group, len(with)+len(alone))
			if err != nil {
				b.Fatalf("failover with %d other DR namespaces: %v", len(running)-1, err)
			}
			b.Logf("round %d, %d other DR namespaces: failover %s, failback %s", round, len(running)-1, over.Round(time.Millisecond), back.Round(time.Millisecond))
			if withOthers {
				with = append(with, (over + back).Seconds())
			} else {
				alone = append(alone, (over + back).Seconds())
			}
		}
	}
	if len(with) > 0 {
		b.ReportMetric(median(with), "failover-pair-with-tenants-s")
		b.ReportMetric(median(alone), "failover-pair-alone-s")
		b.ReportMetric(median(with)/median(alone), "failover-with/alone")
	}
}

// median of a non-empty slice.
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// quorumManager is a measured quorum-manager process and its metrics address.
type quorumManager struct {
	*process
	metrics string
}

// startMeasuredQuorum runs a DR namespace's quorum-manager with its metrics
// served on a free local port.
func (f *fleet) startMeasuredQuorum(drNamespace string) *quorumManager {
	addr := freeAddress(f.t)
	return &quorumManager{process: f.startQuorum(drNamespace, "--metrics-bind-address="+addr), metrics: "http://" + addr + "/metrics"}
}

// managerFigures are one quorum-manager's figures over a window.
type managerFigures struct {
	rssMiB, cached, eventsTotal, eventsPerMin float64
}

// window is what a measured idle window saw.
type window struct {
	managers        map[string]managerFigures
	apiCPU          map[string]float64 // cluster → kube-apiserver CPU seconds per minute
	watchEventsSent map[string]float64 // cluster → watch events sent per minute
}

// measure watches an idle window: the managers' RSS at its end, their cache
// sizes and received events (product metrics), and the CPU and watch events
// of the given clusters' API servers.
func (f *fleet) measure(ctx context.Context, idle time.Duration, clusters []string, managers map[string]*quorumManager) window {
	t := f.t
	scrape := func() (map[string][]byte, map[string][]byte) {
		prod, apis := map[string][]byte{}, map[string][]byte{}
		for name, m := range managers {
			data, err := getURL(ctx, m.metrics)
			require.NoError(t, err, "metrics of %s", name)
			prod[name] = data
		}
		for _, c := range clusters {
			data, err := f.z.Clusters[c].Metrics(ctx)
			require.NoError(t, err)
			apis[c] = data
		}
		return prod, apis
	}
	prodBefore, apiBefore := scrape()
	time.Sleep(idle)
	prodAfter, apiAfter := scrape()
	perMinute := float64(time.Minute) / float64(idle)
	w := window{managers: map[string]managerFigures{}, apiCPU: map[string]float64{}, watchEventsSent: map[string]float64{}}
	for name, m := range managers {
		require.True(t, m.running(), "%s exited (log under %s)", name, f.dir)
		rss, err := m.rss()
		require.NoError(t, err)
		events := func(data []byte) float64 {
			return harness.Sum(harness.Samples(data, "siterecovery_remote_watch_events_total"), nil)
		}
		fig := managerFigures{
			rssMiB:       float64(rss) / (1 << 20),
			cached:       harness.Sum(harness.Samples(prodAfter[name], "siterecovery_remote_cached_objects"), nil),
			eventsTotal:  events(prodAfter[name]),
			eventsPerMin: (events(prodAfter[name]) - events(prodBefore[name])) * perMinute,
		}
		w.managers[name] = fig
		t.Logf("%-10s RSS %6.1f MiB, %6.0f cached objects, %7.0f events since start, %5.0f per idle minute",
			name, fig.rssMiB, fig.cached, fig.eventsTotal, fig.eventsPerMin)
	}
	for _, c := range clusters {
		cpu := func(data []byte) float64 { return harness.Sum(harness.Samples(data, "process_cpu_seconds_total"), nil) }
		sent := func(data []byte) float64 {
			return harness.Sum(harness.Samples(data, "apiserver_watch_events_total"), nil)
		}
		w.apiCPU[c] = (cpu(apiAfter[c]) - cpu(apiBefore[c])) * perMinute
		w.watchEventsSent[c] = (sent(apiAfter[c]) - sent(apiBefore[c])) * perMinute
		t.Logf("%-16s kube-apiserver %.2f CPU s/min, %.0f watch events sent/min", c, w.apiCPU[c], w.watchEventsSent[c])
	}
	return w
}

func envDuration(t testing.TB, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	require.NoError(t, err, name)
	return d
}

func envInt(t testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, name)
	return n
}

// envInts reads a comma-separated list of counts.
func envInts(t testing.TB, name string, def []int) []int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []int
	for _, s := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		require.NoError(t, err, name)
		out = append(out, n)
	}
	return out
}
