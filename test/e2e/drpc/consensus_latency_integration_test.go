package drpc_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	"github.com/siterecovery/siterecovery/test/benchpair"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/harness"
)

// BenchmarkConsensusLatency measures, for 50 DRPCs of one global replication
// group, the time from the update of the last DRPC to the GlobalAction condition
// turning True on every one of them, as quorum-manager's informer sees it,
// against its floor: BenchmarkStatusWriteFloor's 50 plain writes of that
// condition in the same zone, in a namespace no controller watches, until a
// watch saw the last. Floor and consensus rounds run turn by turn and the
// benchmark reports the per-pair ratio (test/benchpair); the log adds the
// percentiles over every DRPC of every round. Each round moves the group once
// (failover to DR, relocate back, failover again):
//
//	go test ./test/e2e/drpc -run '^$' -bench 'ConsensusLatency$' -benchtime 1x -v
//
// BENCH_PAIRS changes the count of rounds (10). DRPC_LATENCY_PROFILE names a
// directory to write a CPU profile of this process (every controller of the
// zone) for each round's window into; merge them with go tool pprof -proto.
func BenchmarkConsensusLatency(b *testing.B) { benchConsensus(b, 50, 10) }

// BenchmarkConsensusLatency200 is BenchmarkConsensusLatency with a group of
// 200 DRPCs: with a flat cost per DRPC its ratio stays that of 50.
//
//	go test ./test/e2e/drpc -run '^$' -bench 'ConsensusLatency200$' -benchtime 1x -v
func BenchmarkConsensusLatency200(b *testing.B) { benchConsensus(b, 200, 5) }

func benchConsensus(b *testing.B, n, pairs int) {
	t := b
	z := newZone(t)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("bench-%03d", i)
		z.addApp(names[i], env.Primary)
	}
	z.waitAll(names, drv1alpha1.DRStateDeployed, env.Primary)
	for _, name := range names {
		env.Eventually(t, timeout, name+" labelled", func() error {
			if z.drpc(name).Labels[drv1alpha1.GlobalVGRLabel] != globalVGR {
				return fmt.Errorf("not labelled")
			}
			return nil
		})
	}
	moves := []struct {
		mutate func(*drv1alpha1.DRPlacementControl)
		done   drv1alpha1.DRState
		on     string
	}{
		{func(d *drv1alpha1.DRPlacementControl) {
			d.Spec.Action, d.Spec.FailoverCluster = drv1alpha1.ActionFailover, env.DR
		},
			drv1alpha1.DRStateFailedOver, env.DR},
		{relocate(env.Primary), drv1alpha1.DRStateRelocated, env.Primary},
	}
	// The floor's writes, in the same zone and turn by turn with its rounds:
	// what the machine, as loaded at that moment, allows at best.
	floor := newWriteFloor(t, z.Clusters[env.Quorum], n)
	var all, floorAll []time.Duration
	floorRound := func(r int, m *benchpair.Meter) {
		_, err := z.Zone.Settle(ctx)
		require.NoError(t, err)
		floorAll = append(floorAll, floor.round(r, m)...)
	}
	productRound := func(r int, m *benchpair.Meter) {
		mv := moves[r%len(moves)]
		lat := z.consensusRound(names, mv.mutate, m)
		t.Logf("round %d: first %s, p50 %s, p99 %s, max %s", r+1, lat[0], percentile(lat, 0.5), percentile(lat, 0.99), lat[len(lat)-1])
		all = append(all, lat...)
		z.waitAll(names, mv.done, mv.on)
	}
	benchpair.Run(b, benchpair.Options{Pairs: pairs, Unit: "consensus"}, floorRound, productRound)
	untouched := &drv1alpha1.DRPlacementControl{}
	require.NoError(t, z.Client(env.Quorum).Get(ctx, client.ObjectKeyFromObject(floor.drpcs[0]), untouched))
	require.Empty(t, untouched.Finalizers, "a controller of the zone reconciled a DRPC of the floor")
	slices.Sort(all)
	slices.Sort(floorAll)
	t.Logf("consensus latency over %d DRPCs, from the last update: p50 %s, p90 %s, p99 %s, max %s",
		n, percentile(all, 0.5), percentile(all, 0.9), percentile(all, 0.99), all[len(all)-1])
	t.Logf("floor in the same zone, %d status writes at once: p50 %s, p90 %s, p99 %s, max %s",
		n, percentile(floorAll, 0.5), percentile(floorAll, 0.9), percentile(floorAll, 0.99), floorAll[len(floorAll)-1])
	b.ReportMetric(float64(percentile(all, 0.5).Milliseconds()), "p50-ms")
	b.ReportMetric(float64(percentile(all, 0.99).Milliseconds()), "p99-ms")
}

// consensusRound asks every DRPC but the last for the move, waits until they
// are blocked on consensus, then updates the last one and returns, sorted, the
// time each DRPC took from that update to GlobalAction True; m measures the
// window from the update to the last arrival.
func (z *zone) consensusRound(names []string, move func(*drv1alpha1.DRPlacementControl), m *benchpair.Meter) []time.Duration {
	t, n := z.t, len(names)
	for _, name := range names[:n-1] {
		z.updateDRPC(name, move)
	}
	for _, name := range names[:n-1] {
		env.Eventually(t, timeout, name+" blocked", func() error {
			if p := z.drpc(name).Status.Progression; p != drv1alpha1.ProgressionWaitOnGlobalAction {
				return fmt.Errorf("progression %s", p)
			}
			return nil
		})
	}
	last := z.drpc(names[n-1])
	before := last.DeepCopy()
	move(last)
	// The benchmark sees what quorum-manager sees, through its informer: a
	// watch of the benchmark's own would add its decoding and the API server's
	// sending to the window it measures, on a machine the window keeps busy.
	inf, err := z.quorum.Cache.GetInformer(ctx, &drv1alpha1.DRPlacementControl{})
	require.NoError(t, err)
	lastName, lastGeneration := last.Name, before.Generation
	arrivals := informerArrivals(t, inf, n, func(d *drv1alpha1.DRPlacementControl) bool {
		c := meta.FindStatusCondition(d.Status.Conditions, drv1alpha1.ConditionGlobalAction)
		// The last DRPC still holds the consensus of the previous move until
		// its update: only a consensus on a later generation is this round's.
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == d.Generation &&
			(d.Name != lastName || d.Generation > lastGeneration)
	})
	reqs, err := z.Clusters[env.Quorum].RequestCounts(ctx)
	require.NoError(t, err)
	// Let the blocked round's own writes and events drain first, and the servers
	// and this process collect their garbage: what is measured is the consensus,
	// not the tail of the previous step, a collection that happens to be due, or
	// one that the reads above (the request counts parse every metric of the
	// API server) would make due.
	quiet, err := z.Zone.Settle(ctx)
	require.NoError(t, err)
	if !quiet {
		t.Logf("the zone did not become quiet before the round")
	}
	cpu, gcs := harness.SampleCPU(), collections()
	stopProfile := profileWindow(t)
	m.Start()
	start := time.Now() // the update itself; reading the DRPC is not part of it
	require.NoError(t, z.Client(env.Quorum).Patch(ctx, last, client.MergeFrom(before)))
	reached, ok := arrivals.wait(timeout)
	m.Stop()
	stopProfile()
	if !ok {
		t.Fatalf("only %d of %d DRPCs reached consensus", len(reached), n)
	}
	window, used := time.Since(start), harness.SampleCPU().Since(cpu)
	after, err := z.Clusters[env.Quorum].RequestCounts(ctx)
	require.NoError(t, err)
	total, kinds := after.Since(reqs, 2)
	t.Logf("window %s, %s, %d collections in this process; %.0f quorum requests (%s)",
		window.Round(time.Millisecond), used, collections()-gcs, total, strings.Join(kinds, "; "))
	lat := make([]time.Duration, 0, n)
	for _, at := range reached {
		lat = append(lat, at.Sub(start))
	}
	slices.Sort(lat)
	return lat
}

// arrivals records when each DRPC first matches a condition, as a watch or a
// cache's informer reports it.
type arrivals struct {
	mu      sync.Mutex
	at      map[string]time.Time
	n       int
	resumed int // times the watch was closed by the server and resumed
	done    chan struct{}
	stop    func()
}

// watchArrivals watches the DRPCs of namespace until n of them have matched,
// or until stop. It returns once the watch is established. The API server
// closes a watch whose reader falls behind, as the benchmark's own reader may
// on a machine the round keeps busy; the watch then resumes from the last
// version it saw, so that an arrival is at worst seen late, never missed.
func watchArrivals(t testing.TB, wc client.WithWatch, namespace string, n int, match func(*drv1alpha1.DRPlacementControl) bool) *arrivals {
	wctx, cancel := context.WithCancel(ctx)
	a := &arrivals{at: map[string]time.Time{}, n: n, done: make(chan struct{}), stop: cancel}
	list := &drv1alpha1.DRPlacementControlList{}
	w, err := wc.Watch(wctx, list, client.InNamespace(namespace))
	require.NoError(t, err)
	go func() {
		defer close(a.done)
		version := ""
		for {
			for ev := range w.ResultChan() {
				if ev.Type == watch.Error {
					return // e.g. the version is gone: the round fails with what it saw
				}
				d, ok := ev.Object.(*drv1alpha1.DRPlacementControl)
				if !ok {
					continue
				}
				version = d.ResourceVersion
				if ev.Type == watch.Deleted || !match(d) {
					continue
				}
				if a.arrive(d.Name) {
					w.Stop()
					return
				}
			}
			if wctx.Err() != nil {
				return
			}
			a.mu.Lock()
			a.resumed++
			a.mu.Unlock()
			if w, err = wc.Watch(wctx, list, client.InNamespace(namespace),
				&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: version}}); err != nil {
				return
			}
		}
	}()
	return a
}

// informerArrivals records arrivals as the informer of a controller's cache
// hands them to its handlers, until n DRPCs have matched or stop.
func informerArrivals(t testing.TB, inf cache.Informer, n int, match func(*drv1alpha1.DRPlacementControl) bool) *arrivals {
	a := &arrivals{at: map[string]time.Time{}, n: n, done: make(chan struct{})}
	var all sync.Once
	see := func(obj any) {
		d, ok := obj.(*drv1alpha1.DRPlacementControl)
		if !ok || !match(d) {
			return
		}
		if a.arrive(d.Name) {
			all.Do(func() { close(a.done) })
		}
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    see,
		UpdateFunc: func(_, obj any) { see(obj) },
	})
	require.NoError(t, err)
	a.stop = func() { _ = inf.RemoveEventHandler(reg) }
	return a
}

// arrive records that the DRPC name matched now, unless it did before, and
// reports whether all n have.
func (a *arrivals) arrive(name string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, seen := a.at[name]; !seen {
		a.at[name] = time.Now()
	}
	return len(a.at) == a.n
}

// wait returns the arrival times and whether all n matched, once they did,
// the watch failed, or timeout passed. Then it stops watching.
func (a *arrivals) wait(timeout time.Duration) (map[string]time.Time, bool) {
	defer a.stop()
	select {
	case <-a.done:
		return a.at, len(a.at) == a.n
	case <-time.After(timeout):
		a.mu.Lock()
		defer a.mu.Unlock()
		return maps.Clone(a.at), false
	}
}

// resumes is the count of times the watch was resumed.
func (a *arrivals) resumes() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.resumed
}

// percentile of sorted durations.
func percentile(sorted []time.Duration, q float64) time.Duration {
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// waitAll waits until every DRPC completed its move to cluster.
func (z *zone) waitAll(names []string, phase drv1alpha1.DRState, cluster string) {
	for _, name := range names {
		z.waitDRPC(name, phase, cluster)
	}
}

// profileWindow profiles this process's CPU until the returned func is called,
// into a new file of the directory DRPC_LATENCY_PROFILE names, if it is set.
func profileWindow(t testing.TB) func() {
	dir := os.Getenv("DRPC_LATENCY_PROFILE")
	if dir == "" {
		return func() {}
	}
	f, err := os.CreateTemp(dir, "window-*.pprof")
	require.NoError(t, err)
	require.NoError(t, pprof.StartCPUProfile(f))
	return func() {
		pprof.StopCPUProfile()
		require.NoError(t, f.Close())
	}
}

// collections is the count of garbage collections this process completed.
func collections() uint32 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.NumGC
}
