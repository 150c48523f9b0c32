package steadystate

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/siterecovery/siterecovery/test/harness"
)

// BenchmarkSteadyState builds the fleet (1,000 protected VMs in 100 groups
// over two zones), waits until a 10-second window passes without a write on
// any cluster, then measures one idle minute and reports:
//
//   - quorum-manager-rss-MiB, pg-controller-rss-MiB (the largest of the four),
//     agent-rss-MiB (the larger of the two agent binaries, 100 resources each);
//
//   - quorum-manager-idle-cpu-%, pg-controller-idle-cpu-%, agent-idle-cpu-%:
//     CPU time over the minute, in percent of one core;
//
//   - <cluster>-req/min: the API requests each cluster served in the minute
//     (apiserver_request_total; the benchmark's own two reads of /metrics
//     included);
//
//   - idle-writes: the writes among them, on every cluster, but each API
//     server's renewal of its own identity Lease. The benchmark fails if there
//     is any, and lists them: at rest nothing changes.
//
//     go test ./test/steadystate -run '^$' -bench SteadyState -benchtime 1x -v
//
// STEADY_IDLE changes the idle window (1m).
func BenchmarkSteadyState(b *testing.B) {
	ctx := context.Background()
	idle := time.Minute
	if v := os.Getenv("STEADY_IDLE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatal(err)
		}
		idle = d
	}
	began := time.Now()
	f := newFleet(b, "zone-a")
	f.seed(ctx, steadyTenants())
	f.startWorkload()
	f.startQuorum(drNamespace)
	f.protect(ctx, steadyTenants())
	b.Logf("fleet of %d groups protected in %s", len(f.groups), time.Since(began).Round(time.Second))
	// Protection's tail (group status, the monitor's first reports) drains;
	// writes that never stop are measured below and fail the benchmark.
	f.settle(ctx)
	b.ResetTimer()
	cpuBefore := f.cpu()
	before := f.requests(ctx)
	time.Sleep(idle)
	after := f.requests(ctx)
	cpuAfter := f.cpu()
	b.StopTimer()
	for _, p := range f.procs {
		if !p.running() {
			b.Fatalf("%s exited (log %s.log under %s)", p.name, p.name, f.dir)
		}
	}
	perMinute := float64(time.Minute) / float64(idle)
	for _, c := range clusterNames() {
		total, kinds := after[c].Since(before[c], 1)
		b.ReportMetric(total*perMinute, c+"-req/min")
		b.Logf("%s: %.0f requests per idle minute: %s", c, total*perMinute, strings.Join(kinds, "; "))
	}
	w, which := writes(after, before)
	b.ReportMetric(float64(w), "idle-writes")
	if w > 0 {
		b.Errorf("%d writes while idle: %s", w, strings.Join(which, "; "))
	}
	kinds := map[string][]float64{}
	rss := map[string][]float64{}
	for _, p := range f.procs {
		kind := kindOf(p.name)
		kinds[kind] = append(kinds[kind], float64(cpuAfter[p.name]-cpuBefore[p.name])/float64(idle)*100)
		r, err := p.rss()
		if err != nil {
			b.Fatal(err)
		}
		rss[kind] = append(rss[kind], float64(r)/(1<<20))
		b.Logf("%-40s RSS %6.1f MiB, idle CPU %5.2f %% of a core", p.name, float64(r)/(1<<20),
			float64(cpuAfter[p.name]-cpuBefore[p.name])/float64(idle)*100)
	}
	for kind, v := range kinds {
		b.ReportMetric(slices.Max(v), kind+"-idle-cpu-%")
		b.ReportMetric(slices.Max(rss[kind]), kind+"-rss-MiB")
	}
}

// settle waits, for up to five minutes, until a 10-second window passes
// without a write on any cluster.
func (f *fleet) settle(ctx context.Context) {
	settled := time.Now()
	for time.Since(settled) < 5*time.Minute {
		before := f.requests(ctx)
		time.Sleep(10 * time.Second)
		w, which := writes(f.requests(ctx), before)
		if w == 0 {
			f.t.Logf("no write for 10 s after %s", time.Since(settled).Round(time.Second))
			return
		}
		f.t.Logf("settling: %d writes in 10 s: %s", w, strings.Join(which, "; "))
	}
}

func kindOf(name string) string {
	switch {
	case strings.HasPrefix(name, "drbd-node-agent"):
		return "agent"
	case strings.HasPrefix(name, "pg-controller"):
		return "pg-controller"
	case strings.HasPrefix(name, "quorum-manager"):
		return "quorum-manager"
	}
	return name
}

func (f *fleet) requests(ctx context.Context) map[string]harness.RequestCounts {
	out := map[string]harness.RequestCounts{}
	for _, c := range clusterNames() {
		r, err := f.z.Clusters[c].RequestCounts(ctx)
		if err != nil {
			f.t.Fatal(err)
		}
		out[c] = r
	}
	return out
}

func (f *fleet) cpu() map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, p := range f.procs {
		d, err := p.cpu()
		if err != nil {
			f.t.Fatal(err)
		}
		out[p.name] = d
	}
	return out
}

// writeVerbs are the verbs of apiserver_request_total that change state.
var writeVerbs = []string{"POST", "PUT", "PATCH", "DELETE", "APPLY", "DELETECOLLECTION"}

// apiServerOwn is the one write each kube-apiserver makes itself while idle:
// the renewal of its identity Lease in kube-system every 10 s. The fleet's
// binaries run without leader election, so no Lease write is theirs.
const apiServerOwn = "PUT leases/"

// writes counts the writes on every cluster between before and after, but
// the API servers' own, and lists them per cluster and kind.
func writes(after, before map[string]harness.RequestCounts) (int, []string) {
	n := 0
	var which []string
	for c, counts := range after {
		for key, v := range counts {
			verb, _, _ := strings.Cut(key, " ")
			if d := v - before[c][key]; d > 0 && slices.Contains(writeVerbs, verb) && key != apiServerOwn {
				n += int(d)
				which = append(which, fmt.Sprintf("%s %s ×%.0f", c, key, d))
			}
		}
	}
	slices.Sort(which)
	return n, which
}
