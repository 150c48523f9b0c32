package failover_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/benchpair"
	"github.com/siterecovery/siterecovery/test/env"
)

// BenchmarkFailover20VMs measures the failover control plane against its
// write floor (write_floor_bench_test.go): a planned failover of a 20-VM group
// with instant VM and DRBD simulators, from the request's creation to
// Completed, turn by turn with a round of the floor's writes on the same
// servers. Each round moves the group to the other cluster. It reports the
// per-pair ratio (benchpair):
//
//	go test ./test/e2e/failover -run '^$' -bench 'Failover20VMs$' -benchtime 1x -v
//
// BENCH_PAIRS changes the count of pairs (10). -v shows each pair and the time
// spent in each phase; FAILOVER_BENCH_TRACE=1 adds a timeline of the last
// failover and the API requests it made on each cluster;
// FAILOVER_BENCH_PROFILE=DIR writes a CPU profile of this process (every
// in-process controller, agent and simulator) per measured round into DIR,
// product-N.pprof and floor-N.pprof, for `go tool pprof DIR/product-*`;
// FAILOVER_BENCH_APISERVER_PROFILE=DIR one of each cluster's kube-apiserver,
// product-<cluster>-N.pprof and floor-<cluster>-N.pprof (see apiProfiler).
func BenchmarkFailover20VMs(b *testing.B) { benchOneGroup(b, 20, 10) }

// BenchmarkFailover100VMs and BenchmarkFailover200VMs are the scale curve of
// BenchmarkFailover20VMs: one group of 100 and 200 VMs. The cost per VM is flat
// when the ratio stays that of 20 VMs.
//
//	go test ./test/e2e/failover -run '^$' -bench 'Failover(100|200)VMs$' -benchtime 1x -v
func BenchmarkFailover100VMs(b *testing.B) { benchOneGroup(b, 100, 5) }

func BenchmarkFailover200VMs(b *testing.B) { benchOneGroup(b, 200, 5) }

func benchOneGroup(b *testing.B, vms, pairs int) {
	z := newZone(b, zoneOptions{vms: vms})
	fs := z.newFloor(b, []string{group}, [][]string{z.vms})
	runFailoverPairs(b, z, fs, pairs)
}

// runFailoverPairs fails the zone's groups (fs.names) over at once, back and
// forth, turn by turn with the floor's rounds.
func runFailoverPairs(b *testing.B, z *zone, fs *floorSet, pairs int) {
	wc, err := client.NewWithWatch(z.Clusters[env.Quorum].Config, client.Options{Scheme: z.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	targets := []string{env.DR, env.Primary}
	perPhase := map[string]time.Duration{}
	reconcilesBefore := reconcileTimes(b)
	var tr *tracer
	if os.Getenv("FAILOVER_BENCH_TRACE") != "" {
		traceCtx, stopTrace := context.WithCancel(context.Background())
		defer stopTrace()
		tr = z.trace(traceCtx, b)
	}
	ctx := context.Background()
	prof := newRoundProfiler(b, os.Getenv("FAILOVER_BENCH_PROFILE"))
	apiProf := newAPIProfiler(b, z, os.Getenv("FAILOVER_BENCH_APISERVER_PROFILE"))
	floor := func(i int, m *benchpair.Meter) {
		src, tgt := env.Primary, env.DR
		if i%2 == 1 {
			src, tgt = tgt, src
		}
		f := fs.read(b, z, src, tgt)
		if _, err := z.Zone.Settle(ctx); err != nil {
			b.Fatal(err)
		}
		m.Start()
		prof.start("floor", i)
		apiProf.start("floor", i)
		if err := f.run(ctx); err != nil {
			b.Fatal(err)
		}
		m.Stop()
		prof.stop()
		apiProf.wait()
	}
	var rounds int
	product := func(i int, m *benchpair.Meter) {
		rounds++
		ctx, cancel := context.WithTimeout(ctx, timeout*time.Duration(1+len(z.vms)/50))
		defer cancel()
		// The previous round's tail (pg-sync, the monitor, events) drains and
		// the servers collect their garbage before the next one is measured.
		if _, err := z.Zone.Settle(ctx); err != nil {
			b.Fatal(err)
		}
		w, err := wc.Watch(ctx, &srv1alpha1.FailoverRequestList{}, client.InNamespace(env.Namespace))
		if err != nil {
			b.Fatal(err)
		}
		defer w.Stop()
		if tr != nil {
			tr.begin(b, z)
		}
		names := map[string]string{} // request → group
		m.Start()
		prof.start("product", i)
		apiProf.start("product", i)
		start := time.Now()
		for _, g := range fs.names {
			name := fmt.Sprintf("bench-%s-%d", g, i)
			names[name] = g
			z.failoverGroup(name, g, targets[i%2], srv1alpha1.FailoverPlanned)
		}
		done := map[string]*srv1alpha1.FailoverRequest{}
		for ev := range w.ResultChan() {
			fr, ok := ev.Object.(*srv1alpha1.FailoverRequest)
			if ok && names[fr.Name] != "" && fr.Status.CompletionTime != nil {
				done[fr.Name] = fr
				if len(done) == len(names) {
					break
				}
			}
		}
		m.Stop()
		prof.stop()
		apiProf.wait()
		if len(done) != len(names) {
			b.Fatalf("round %d: %d of %d requests completed", i, len(done), len(names))
		}
		for _, fr := range done {
			if fr.Status.Phase != srv1alpha1.FailoverCompleted {
				b.Fatalf("%s did not complete: %s: %s", fr.Name, fr.Status.Phase, fr.Status.Message)
			}
			h := fr.Status.PhaseHistory
			perPhase["Created→Pending"] += h[0].Time.Sub(start)
			for j := 0; j+1 < len(h); j++ {
				perPhase[h[j].Phase] += h[j+1].Time.Sub(h[j].Time.Time)
			}
		}
		if tr != nil {
			time.Sleep(200 * time.Millisecond) // let the trace's watches catch up
			tr.print(b, z)
		}
	}
	benchpair.Run(b, benchpair.Options{Pairs: pairs, Unit: "failover"}, floor, product)
	n := float64(rounds * len(fs.names))
	for _, p := range []string{"Created→Pending", "Pending", "StoppingOnSource", "WaitingForDRBD", "StartingOnTarget"} {
		b.Logf("%-18s %6.0f ms average per request", p, float64(perPhase[p].Milliseconds())/n)
	}
	// Where the time goes: every controller in this process (quorum-manager,
	// pg-controllers, agents, simulators), per failover round.
	after := reconcileTimes(b)
	names := make([]string, 0, len(after))
	for n := range after {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		d := after[name].sub(reconcilesBefore[name])
		if d.count > 0 {
			b.Logf("controller %-20s %5.0f reconciles per round, %6.1f ms each on average", name, d.count/float64(rounds), d.seconds*1000/d.count)
		}
	}
}

// roundProfiler writes a CPU profile of each measured round into dir; it
// does nothing when dir is empty.
type roundProfiler struct {
	b   *testing.B
	dir string
	f   *os.File
}

func newRoundProfiler(b *testing.B, dir string) *roundProfiler {
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	return &roundProfiler{b: b, dir: dir}
}

func (p *roundProfiler) start(kind string, i int) {
	if p.dir == "" {
		return
	}
	f, err := os.Create(filepath.Join(p.dir, fmt.Sprintf("%s-%d.pprof", kind, i)))
	if err != nil {
		p.b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		p.b.Fatal(err)
	}
	p.f = f
}

func (p *roundProfiler) stop() {
	if p.f == nil {
		return
	}
	pprof.StopCPUProfile()
	if err := p.f.Close(); err != nil {
		p.b.Fatal(err)
	}
	p.f = nil
}

// apiProfiler writes a CPU profile of each cluster's kube-apiserver from the
// start of each measured round into dir; it does nothing when dir is empty.
// The endpoint profiles whole seconds: a profile covers the round's first
// second per 50 VMs of the zone (about a round's length), so a shorter
// round's profile also holds the start of what follows it (the settling
// before the next round). Compare product and floor profiles of rounds of
// similar length, or with -diff_base.
type apiProfiler struct {
	b   *testing.B
	z   *zone
	dir string
	wg  sync.WaitGroup
	err error
	mu  sync.Mutex
}

func newAPIProfiler(b *testing.B, z *zone, dir string) *apiProfiler {
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	return &apiProfiler{b: b, z: z, dir: dir}
}

func (p *apiProfiler) start(kind string, i int) {
	if p.dir == "" {
		return
	}
	for _, c := range []string{env.Quorum, env.Primary, env.DR} {
		p.wg.Go(func() {
			f, err := os.Create(filepath.Join(p.dir, fmt.Sprintf("%s-%s-%d.pprof", kind, c, i)))
			if err == nil {
				err = errors.Join(p.z.Clusters[c].CPUProfile(context.Background(), 1+len(p.z.vms)/50, f), f.Close())
			}
			p.mu.Lock()
			p.err = errors.Join(p.err, err)
			p.mu.Unlock()
		})
	}
}

// wait waits for the round's profiles, after its window closed.
func (p *apiProfiler) wait() {
	p.wg.Wait()
	if p.err != nil {
		p.b.Fatal(p.err)
	}
}

// failoverGroup creates a FailoverRequest for group g.
func (z *zone) failoverGroup(name, g, target string, typ srv1alpha1.FailoverType) {
	z.t.Helper()
	z.failover(name, target, typ, func(fr *srv1alpha1.FailoverRequest) {
		fr.Spec.ProtectionGroupRef.Name = g
	})
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
