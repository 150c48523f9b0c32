package failover

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// TestUnplannedToFencedOffClusterHolds: the group records dr as fenced off;
// an unplanned request to it holds in Pending, naming the record and the ways
// on, and asks nothing of either cluster. Without the record it starts.
func TestUnplannedToFencedOffClusterHolds(t *testing.T) {
	c := phaseCase{typ: srv1alpha1.FailoverUnplanned, phase: srv1alpha1.FailoverPending,
		primary: cluster{objs: []client.Object{groupCopyIn(testGroup, running, running), replica("node-a", pri, pri, false)}, state: remote.Unreachable},
		dr:      cluster{objs: []client.Object{groupCopyIn(testGroup, stopped, stopped), replica("node-b", pri, pri, false)}}}
	record := func(t *testing.T, f *fixture, cluster string) {
		pg := &srv1alpha1.ProtectionGroup{}
		require.NoError(t, f.quorum.Get(f.ctx, client.ObjectKey{Namespace: testNS, Name: testGroup}, pg))
		pg.Annotations = map[string]string{srv1alpha1.FencedOffAnnotation: cluster}
		require.NoError(t, f.quorum.Update(f.ctx, pg))
	}

	t.Run("held", func(t *testing.T) {
		f := newFixture(c)
		record(t, f, drCluster)
		fr := reconcileOnce(t, f, nil)
		require.Equal(t, srv1alpha1.FailoverPending, fr.Status.Phase)
		cond := meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionTargetRejoined)
		require.NotNil(t, cond)
		require.Equal(t, metav1.ConditionFalse, cond.Status)
		require.Equal(t, srv1alpha1.ReasonTargetFencedOff, cond.Reason)
		for _, want := range []string{"dr was fenced off", "lose them", "delete this request", srv1alpha1.DiscardDivergedAnnotation + "=g", srv1alpha1.FencedOffAnnotation + "-"} {
			require.Contains(t, cond.Message, want)
		}
		require.Equal(t, srv1alpha1.ReasonTargetFencedOff, meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionReady).Reason)
		require.Equal(t, stopped, f.groupCopy(t, drCluster).Spec.DesiredState, "the fenced-off cluster is not started")
	})
	t.Run("the operator removing the record lets it go on", func(t *testing.T) {
		f := newFixture(c)
		record(t, f, drCluster)
		fr := reconcileOnce(t, f, nil)
		require.Equal(t, srv1alpha1.ReasonTargetFencedOff, readyReasonOf(fr))
		pg := &srv1alpha1.ProtectionGroup{}
		require.NoError(t, f.quorum.Get(f.ctx, client.ObjectKey{Namespace: testNS, Name: testGroup}, pg))
		delete(pg.Annotations, srv1alpha1.FencedOffAnnotation)
		require.NoError(t, f.quorum.Update(f.ctx, pg))
		fr = reconcileOnce(t, f, nil)
		require.NotEqual(t, srv1alpha1.FailoverPending, fr.Status.Phase, "the request continues: %s", fr.Status.Message)
		require.Nil(t, meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionTargetRejoined), "the hold's condition went with it")
	})
	t.Run("a record of the other cluster does not hold it", func(t *testing.T) {
		f := newFixture(c)
		record(t, f, primary)
		fr := reconcileOnce(t, f, nil)
		require.Nil(t, meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionTargetRejoined))
		require.NotEqual(t, srv1alpha1.FailoverPending, fr.Status.Phase)
	})
}
