package failover_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/harness"
)

// BenchmarkFailover20VMs measures the failover control plane's overhead: a
// planned failover of a 20-VM group with instant VM and DRBD simulators, from the
// request's creation to Completed, with the time spent in each phase. Each
// iteration moves the group to the other cluster.
//
//	go test ./internal/quorum/failover -run '^$' -bench Failover20VMs -benchtime 6x -v
//
// -v shows every line of the breakdown; FAILOVER_BENCH_TRACE=1 adds a timeline
// of the last failover and the API requests it made on each cluster.
func BenchmarkFailover20VMs(b *testing.B) {
	z := newZone(b, zoneOptions{vms: 20})
	wc, err := client.NewWithWatch(z.Clusters[env.Quorum].Config, client.Options{Scheme: z.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	targets := []string{env.DR, env.Primary}
	perPhase := map[string]time.Duration{}
	reconcilesBefore := reconcileTimes(b)
	var total []time.Duration
	var tr *tracer
	if os.Getenv("FAILOVER_BENCH_TRACE") != "" {
		traceCtx, stopTrace := context.WithCancel(context.Background())
		defer stopTrace()
		tr = z.trace(traceCtx, b)
	}
	var used time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		name := fmt.Sprintf("bench-%d", i)
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		// The previous failover's tail (pg-sync, the monitor, events) drains and
		// the servers collect their garbage before the next one is measured.
		b.StopTimer()
		if _, err := z.Zone.Settle(ctx); err != nil {
			b.Fatal(err)
		}
		cpu := harness.SampleCPU()
		b.StartTimer()
		w, err := wc.Watch(ctx, &srv1alpha1.FailoverRequestList{}, client.InNamespace(env.Namespace))
		if err != nil {
			b.Fatal(err)
		}
		if tr != nil {
			tr.begin(b, z)
		}
		start := time.Now()
		z.failover(name, targets[i%2], srv1alpha1.FailoverPlanned)
		var done *srv1alpha1.FailoverRequest
		for ev := range w.ResultChan() {
			fr, ok := ev.Object.(*srv1alpha1.FailoverRequest)
			if ok && fr.Name == name && fr.Status.CompletionTime != nil {
				done = fr
				break
			}
		}
		elapsed := time.Since(start)
		after := harness.SampleCPU()
		used += after.Used(cpu)
		w.Stop()
		cancel()
		if done == nil || done.Status.Phase != srv1alpha1.FailoverCompleted {
			b.Fatalf("%s did not complete: %+v", name, done)
		}
		total = append(total, elapsed)
		b.Logf("%s to %s: %s, %s", name, targets[i%2], elapsed.Round(time.Millisecond), after.Since(cpu))
		if tr != nil && i == b.N-1 {
			time.Sleep(200 * time.Millisecond) // let the trace's watches catch up
			tr.print(b, z)
		}
		h := done.Status.PhaseHistory
		perPhase["Created→Pending"] += h[0].Time.Sub(start)
		for j := 0; j+1 < len(h); j++ {
			perPhase[h[j].Phase] += h[j+1].Time.Sub(h[j].Time.Time)
		}
	}
	b.StopTimer()
	b.Logf("%d failovers: %s of CPU per failover", b.N, (used / time.Duration(b.N)).Round(time.Millisecond))
	sort.Slice(total, func(i, j int) bool { return total[i] < total[j] })
	b.ReportMetric(float64(total[len(total)/2].Milliseconds()), "median-ms")
	b.ReportMetric(float64(total[len(total)-1].Milliseconds()), "max-ms")
	for _, p := range []string{"Created→Pending", "Pending", "StoppingOnSource", "WaitingForDRBD", "StartingOnTarget"} {
		b.Logf("%-18s %6.0f ms average", p, float64(perPhase[p].Milliseconds())/float64(b.N))
	}
	// Where the time goes: every controller in this process (quorum-manager,
	// pg-controllers, agents, simulators), per failover.
	after := reconcileTimes(b)
	names := make([]string, 0, len(after))
	for n := range after {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		d := after[n].sub(reconcilesBefore[n])
		if d.count > 0 {
			b.Logf("controller %-20s %5.0f reconciles, %6.1f ms each on average", n, d.count/float64(b.N), d.seconds*1000/d.count)
		}
	}
}

type reconcileTime struct{ count, seconds float64 }

func (a reconcileTime) sub(b reconcileTime) reconcileTime {
	return reconcileTime{a.count - b.count, a.seconds - b.seconds}
}

// reconcileTimes sums controller-runtime's reconcile time histogram per
// controller name.
func reconcileTimes(b *testing.B) map[string]reconcileTime {
	families, err := metrics.Registry.Gather()
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]reconcileTime{}
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_time_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" {
					t := out[l.GetValue()]
					t.count += float64(m.GetHistogram().GetSampleCount())
					t.seconds += m.GetHistogram().GetSampleSum()
					out[l.GetValue()] = t
				}
			}
		}
	}
	return out
}
