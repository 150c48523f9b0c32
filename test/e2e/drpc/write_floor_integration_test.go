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

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/benchpair"
	"github.com/siterecovery/siterecovery/test/harness"
)

// BenchmarkStatusWriteFloor measures what BenchmarkConsensusLatency cannot go
// below on the machine it runs on: a plain client, with no controller, writes
// the GlobalAction condition of 50 DRPCs at once (the writes a group's
// consensus makes), on one API server and nothing else running, and a watch
// sees all 50. The figures are the time from the first write to the watch
// seeing the last one, over every round.
//
//	go test ./test/e2e/drpc -run '^$' -bench StatusWriteFloor -benchtime 1x -v
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
	f := newWriteFloor(b, z.Clusters["quorum"], n)
	var all []time.Duration
	for r := range rounds {
		_, err := z.Settle(ctx)
		require.NoError(b, err)
		all = append(all, f.round(r, nil)...)
	}
	slices.Sort(all)
	b.Logf("%d status writes at once, %d rounds: p50 %s, p90 %s, p99 %s", n, rounds, percentile(all, 0.5), percentile(all, 0.9), percentile(all, 0.99))
	b.ReportMetric(float64(percentile(all, 0.99).Milliseconds()), "p99-ms")
}

// writeFloor is the floor's 50 DRPCs, in a namespace of their own that no
// controller watches, on the cluster c.
type writeFloor struct {
	t     testing.TB
	c     *harness.Cluster
	wc    client.WithWatch
	drpcs []*drv1alpha1.DRPlacementControl
}

// floorNamespace holds the floor's DRPCs. quorum-manager's cache is scoped to
// the DR namespace, so in a zone it runs in, it never sees them.
const floorNamespace = "floor"

func newWriteFloor(t testing.TB, c *harness.Cluster, n int) *writeFloor {
	require.NoError(t, c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: floorNamespace}}))
	f := &writeFloor{t: t, c: c, drpcs: make([]*drv1alpha1.DRPlacementControl, n)}
	for i := range f.drpcs {
		d := &drv1alpha1.DRPlacementControl{ObjectMeta: metav1.ObjectMeta{Namespace: floorNamespace, Name: fmt.Sprintf("floor-%02d", i),
			Labels: map[string]string{drv1alpha1.GlobalVGRLabel: "floor"}},
			Spec: drv1alpha1.DRPlacementControlSpec{ProtectionGroupRef: srv1alpha1.LocalObjectReference{Name: "floor"},
				DRPolicyRef: srv1alpha1.LocalObjectReference{Name: "floor"}, PreferredCluster: "primary-cluster"}}
		require.NoError(t, c.Client.Create(ctx, d))
		f.drpcs[i] = d
	}
	var err error
	f.wc, err = client.NewWithWatch(c.Config, client.Options{Scheme: c.Client.Scheme()})
	require.NoError(t, err)
	return f
}

// round writes the GlobalAction condition of every floor DRPC at once, True
// and False in turn, and returns, unsorted, the time from the first write to
// the watch seeing each; m, when set, measures the window from the first write
// to the watch seeing the last. The caller settles the zone first.
func (f *writeFloor) round(r int, m *benchpair.Meter) []time.Duration {
	status := metav1.ConditionStatus([]string{"True", "False"}[r%2])
	arrivals := watchArrivals(f.t, f.wc, floorNamespace, len(f.drpcs), func(d *drv1alpha1.DRPlacementControl) bool {
		return meta.IsStatusConditionPresentAndEqual(d.Status.Conditions, drv1alpha1.ConditionGlobalAction, status)
	})
	cpu := harness.SampleCPU()
	if m != nil {
		m.Start()
	}
	start := time.Now()
	var wg sync.WaitGroup
	for _, d := range f.drpcs {
		wg.Go(func() {
			setFloorStatus(d, status, start)
			require.NoError(f.t, f.c.Client.Status().Update(ctx, d))
		})
	}
	wg.Wait()
	seen, ok := arrivals.wait(time.Minute)
	if m != nil {
		m.Stop()
	}
	require.True(f.t, ok, "the watch saw %d of %d writes", len(seen), len(f.drpcs))
	f.t.Logf("floor round %d: %s, %s, watch resumed %d times", r+1, time.Since(start).Round(time.Millisecond), harness.SampleCPU().Since(cpu), arrivals.resumes())
	lat := make([]time.Duration, 0, len(seen))
	for _, at := range seen {
		lat = append(lat, at.Sub(start))
	}
	return lat
}

// setFloorStatus gives d the status a DRPC of a moving group has: the four
// conditions, with GlobalAction at status.
func setFloorStatus(d *drv1alpha1.DRPlacementControl, status metav1.ConditionStatus, now time.Time) {
	for _, c := range []metav1.Condition{
		{Type: drv1alpha1.ConditionAvailable, Status: "False", Reason: "Progressing",
			Message: "FailingOver: FailingOverToCluster: waiting for the VRG on dr-cluster to become primary (spec primary, status \"Secondary\")"},
		{Type: drv1alpha1.ConditionPeerReady, Status: "False", Reason: "Progressing", Message: "an action is in progress"},
		{Type: drv1alpha1.ConditionProtected, Status: "False", Reason: "Progressing",
			Message: "VRG on \"primary-cluster\" is not primary and ready yet (spec primary, status \"Primary\")"},
		{Type: drv1alpha1.ConditionGlobalAction, Status: status, Reason: "ConsensusReached", Message: "Consensus reached for action Failover"},
	} {
		c.ObservedGeneration = d.Generation
		meta.SetStatusCondition(&d.Status.Conditions, c)
	}
	d.Status.ObservedGeneration = d.Generation
	d.Status.Phase = drv1alpha1.DRStateFailingOver
	d.Status.Progression = "FailingOverToCluster"
	d.Status.PreferredDecision.ClusterName = "primary-cluster"
	d.Status.ActionStartTime = &metav1.Time{Time: now}
	d.Status.LastUpdateTime = &metav1.Time{Time: now}
}
