package drpc_test

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ramenv1alpha1 "github.com/siterecovery/siterecovery/apis/ramendr/v1alpha1"
	"github.com/siterecovery/siterecovery/test/env"
)

// BenchmarkConsensusLatency measures, for 50 DRPCs of one global replication
// group, the time from the update of the last DRPC to the GlobalAction condition
// turning True on each of them, as seen by a watch on the quorum API server. The
// zone takes a minute to set up, so one iteration is all the benchmark runs:
//
//	go test ./pkg/drpc -run '^$' -bench ConsensusLatency -benchtime 1x
//
// Set DRPC_LATENCY_DRPCS to change the count.
func BenchmarkConsensusLatency(b *testing.B) {
	t := b
	n := 50
	if v := os.Getenv("DRPC_LATENCY_DRPCS"); v != "" {
		_, _ = fmt.Sscan(v, &n)
	}
	z := newZone(t)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("bench-%02d", i)
		z.addApp(names[i], env.Primary)
	}
	for _, name := range names {
		z.waitDRPC(name, ramenv1alpha1.DRStateDeployed, ramenv1alpha1.ProgressionCompleted, env.Primary)
		env.Eventually(t, timeout, name+" labelled", func() error {
			if z.drpc(name).Labels[ramenv1alpha1.GlobalVGRLabel] != globalVGR {
				return fmt.Errorf("not labelled")
			}
			return nil
		})
	}
	failover := func(d *ramenv1alpha1.DRPlacementControl) {
		d.Spec.Action, d.Spec.FailoverCluster = ramenv1alpha1.ActionFailover, env.DR
	}
	for _, name := range names[:n-1] {
		z.updateDRPC(name, failover)
	}
	for _, name := range names[:n-1] {
		env.Eventually(t, timeout, name+" blocked", func() error {
			if z.drpc(name).Status.Progression != ramenv1alpha1.ProgressionWaitOnGlobalAction {
				return fmt.Errorf("progression %s", z.drpc(name).Status.Progression)
			}
			return nil
		})
	}

	wc, err := client.NewWithWatch(z.Clusters[env.Quorum].Config, client.Options{Scheme: z.Scheme})
	require.NoError(t, err)
	w, err := wc.Watch(ctx, &ramenv1alpha1.DRPlacementControlList{}, client.InNamespace(env.Namespace))
	require.NoError(t, err)
	defer w.Stop()
	var mu sync.Mutex
	reached := map[string]time.Time{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			d, ok := ev.Object.(*ramenv1alpha1.DRPlacementControl)
			if !ok || ev.Type == watch.Deleted || !meta.IsStatusConditionTrue(d.Status.Conditions, ramenv1alpha1.ConditionGlobalAction) {
				continue
			}
			mu.Lock()
			if _, seen := reached[d.Name]; !seen {
				reached[d.Name] = time.Now()
			}
			all := len(reached) == n
			mu.Unlock()
			if all {
				return
			}
		}
	}()
	start := time.Now()
	z.updateDRPC(names[n-1], failover)
	select {
	case <-done:
	case <-time.After(timeout):
		t.Fatalf("only %d of %d DRPCs reached consensus", len(reached), n)
	}
	lat := make([]time.Duration, 0, n)
	for _, at := range reached {
		lat = append(lat, at.Sub(start))
	}
	slices.Sort(lat)
	p := func(q float64) time.Duration { return lat[min(len(lat)-1, int(q*float64(len(lat))))] }
	t.Logf("consensus latency over %d DRPCs from the last update: p50 %s, p90 %s, p99 %s, max %s",
		n, p(0.5), p(0.9), p(0.99), lat[len(lat)-1])
	b.ReportMetric(float64(p(0.5).Milliseconds()), "p50-ms")
	b.ReportMetric(float64(p(0.99).Milliseconds()), "p99-ms")
}
