package drpc_test

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ramenv1alpha1 "github.com/siterecovery/siterecovery/apis/ramendr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/pkg/scheme"
	"github.com/siterecovery/siterecovery/test/harness"
)

// BenchmarkStatusWriteFloor measures what BenchmarkConsensusLatency cannot go
// below on the machine it runs on: a plain client, with no controller, writes
// the GlobalAction condition of 50 DRPCs at once (the writes a group's
// consensus makes), on one API server and nothing else running, and a watch
// sees all 50. The figures are the time from the first write to the watch
// seeing the last one, over every round.
//
//	go test ./pkg/drpc -run '^$' -bench StatusWriteFloor -benchtime 1x -v
//
// DRPC_LATENCY_DRPCS and DRPC_LATENCY_ROUNDS change the count of DRPCs (50) and
// rounds (10).
func BenchmarkStatusWriteFloor(b *testing.B) {
	n, rounds := 50, 10
	if v := os.Getenv("DRPC_LATENCY_DRPCS"); v != "" {
		_, _ = fmt.Sscan(v, &n)
	}
	if v := os.Getenv("DRPC_LATENCY_ROUNDS"); v != "" {
		_, _ = fmt.Sscan(v, &rounds)
	}
	z := harness.Start(b, harness.Options{CRDDirectoryPaths: harness.DefaultCRDPaths(), Scheme: scheme.New()}, "quorum")
	c := z.Clusters["quorum"]
	const ns = "floor"
	require.NoError(b, c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	drpcs := make([]*ramenv1alpha1.DRPlacementControl, n)
	for i := range drpcs {
		d := &ramenv1alpha1.DRPlacementControl{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("floor-%02d", i),
			Labels: map[string]string{ramenv1alpha1.GlobalVGRLabel: "floor"}},
			Spec: ramenv1alpha1.DRPlacementControlSpec{ProtectionGroupRef: srv1alpha1.LocalObjectReference{Name: "floor"},
				DRPolicyRef: srv1alpha1.LocalObjectReference{Name: "floor"}, PreferredCluster: "primary-cluster"}}
		require.NoError(b, c.Client.Create(ctx, d))
		drpcs[i] = d
	}
	wc, err := client.NewWithWatch(c.Config, client.Options{Scheme: c.Client.Scheme()})
	require.NoError(b, err)
	var all []time.Duration
	for r := range rounds {
		status := metav1.ConditionStatus([]string{"True", "False"}[r%2])
		arrivals := watchArrivals(b, wc, ns, n, func(d *ramenv1alpha1.DRPlacementControl) bool {
			return meta.IsStatusConditionPresentAndEqual(d.Status.Conditions, ramenv1alpha1.ConditionGlobalAction, status)
		})
		_, err = z.Settle(ctx)
		require.NoError(b, err)
		cpu := harness.SampleCPU()
		start := time.Now()
		var wg sync.WaitGroup
		for _, d := range drpcs {
			wg.Go(func() {
				setFloorStatus(d, status, start)
				require.NoError(b, c.Client.Status().Update(ctx, d))
			})
		}
		wg.Wait()
		seen, ok := arrivals.wait(time.Minute)
		require.True(b, ok, "the watch saw %d of %d writes", len(seen), n)
		window := time.Since(start)
		b.Logf("round %d: %s, %s, watch resumed %d times", r+1, window.Round(time.Millisecond), harness.SampleCPU().Since(cpu), arrivals.resumes())
		for _, at := range seen {
			all = append(all, at.Sub(start))
		}
	}
	slices.Sort(all)
	b.Logf("%d status writes at once, %d rounds: p50 %s, p90 %s, p99 %s", n, rounds, percentile(all, 0.5), percentile(all, 0.9), percentile(all, 0.99))
	b.ReportMetric(float64(percentile(all, 0.99).Milliseconds()), "p99-ms")
}

// setFloorStatus gives d the status a DRPC of a moving group has: the four
// conditions, with GlobalAction at status.
func setFloorStatus(d *ramenv1alpha1.DRPlacementControl, status metav1.ConditionStatus, now time.Time) {
	for _, c := range []metav1.Condition{
		{Type: ramenv1alpha1.ConditionAvailable, Status: "False", Reason: "Progressing",
			Message: "FailingOver: FailingOverToCluster: waiting for the VRG on dr-cluster to become primary (spec primary, status \"Secondary\")"},
		{Type: ramenv1alpha1.ConditionPeerReady, Status: "False", Reason: "Progressing", Message: "an action is in progress"},
		{Type: ramenv1alpha1.ConditionProtected, Status: "False", Reason: "Progressing",
			Message: "VRG on \"primary-cluster\" is not primary and ready yet (spec primary, status \"Primary\")"},
		{Type: ramenv1alpha1.ConditionGlobalAction, Status: status, Reason: "ConsensusReached", Message: "Consensus reached for action Failover"},
	} {
		c.ObservedGeneration = d.Generation
		meta.SetStatusCondition(&d.Status.Conditions, c)
	}
	d.Status.ObservedGeneration = d.Generation
	d.Status.Phase = ramenv1alpha1.DRStateFailingOver
	d.Status.Progression = "FailingOverToCluster"
	d.Status.PreferredDecision.ClusterName = "primary-cluster"
	d.Status.ActionStartTime = &metav1.Time{Time: now}
	d.Status.LastUpdateTime = &metav1.Time{Time: now}
}
