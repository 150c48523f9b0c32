package drpc

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

func vrg(name string, spec drv1alpha1.ReplicationState, state drv1alpha1.State) *drv1alpha1.VolumeReplicationGroup {
	return &drv1alpha1.VolumeReplicationGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name, Generation: 1, Labels: map[string]string{drv1alpha1.GlobalVGRLabel: "global-rg"}},
		Spec:       drv1alpha1.VolumeReplicationGroupSpec{ReplicationState: spec},
		Status:     drv1alpha1.VolumeReplicationGroupStatus{State: state, ObservedGeneration: 1},
	}
}

func remoteWith(t *testing.T, objs ...client.Object) *remote.Remote {
	s := runtime.NewScheme()
	require.NoError(t, drv1alpha1.AddToScheme(s))
	return &remote.Remote{Cached: fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()}
}

// The relocate barrier of a global group: every VRG secondary on both clusters
// before any peer promotes; once one has, the target's VRGs (which then report
// no state) no longer hold the others.
func TestRelocateBarrier(t *testing.T) {
	const src, tgt = "dr", "primary"
	self := drpc("app-1", drv1alpha1.ActionRelocate, "", tgt)
	s := &scope{drpc: &self, vrgNamespace: "apps"}
	r := &Reconciler{}
	ctx := context.Background()
	sec, pri := drv1alpha1.Secondary, drv1alpha1.Primary

	s.remotes = map[string]*remote.Remote{
		src: remoteWith(t, vrg("app-1", sec, drv1alpha1.SecondaryState), vrg("app-2", sec, drv1alpha1.PrimaryState)),
		tgt: remoteWith(t, vrg("app-1", sec, drv1alpha1.SecondaryState), vrg("app-2", sec, drv1alpha1.SecondaryState)),
	}
	promoting, err := r.groupPromoting(ctx, s, tgt)
	require.NoError(t, err)
	require.False(t, promoting)
	pending, err := r.peersNotSecondary(ctx, s, src, tgt, promoting)
	require.NoError(t, err)
	require.Equal(t, []string{"apps/app-2 on dr"}, pending, "a peer still primary on the source holds the group")

	// app-3 passed the barrier and asked for primary on the target: app-2's VRG
	// there lost its state, which must not hold app-1.
	s.remotes = map[string]*remote.Remote{
		src: remoteWith(t, vrg("app-1", sec, drv1alpha1.SecondaryState), vrg("app-2", sec, drv1alpha1.SecondaryState), vrg("app-3", sec, drv1alpha1.SecondaryState)),
		tgt: remoteWith(t, vrg("app-1", sec, drv1alpha1.UnknownState), vrg("app-2", sec, drv1alpha1.UnknownState), vrg("app-3", pri, drv1alpha1.UnknownState)),
	}
	promoting, err = r.groupPromoting(ctx, s, tgt)
	require.NoError(t, err)
	require.True(t, promoting)
	pending, err = r.peersNotSecondary(ctx, s, src, tgt, promoting)
	require.NoError(t, err)
	require.Empty(t, pending)
}

// The start of a global group's action waits until every peer recorded
// consensus, at most groupStartGrace.
func TestAwaitGroupStart(t *testing.T) {
	now := time.Now()
	recorded := func(name string) *drv1alpha1.DRPlacementControl {
		d := drpc(name, drv1alpha1.ActionFailover, "c2", "c1")
		d.Generation = 2
		d.Status.Conditions = []metav1.Condition{{Type: drv1alpha1.ConditionGlobalAction, Status: metav1.ConditionTrue, ObservedGeneration: 2}}
		return &d
	}
	stale := recorded("app-2")
	stale.Generation = 3 // asked again since it recorded
	s := runtime.NewScheme()
	require.NoError(t, drv1alpha1.AddToScheme(s))
	build := func(objs ...client.Object) *Reconciler {
		b := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...)
		for name, value := range drpcIndexes {
			b = b.WithIndex(&drv1alpha1.DRPlacementControl{}, name, indexerFunc(value))
		}
		return &Reconciler{Client: b.Build()}
	}
	self := recorded("app-1")
	self.Status.ActionStartTime = &metav1.Time{Time: now.Add(-time.Second)}
	sc := &scope{drpc: self, now: now}

	wait, err := build(self, stale).awaitGroupStart(context.Background(), sc)
	require.NoError(t, err)
	require.InDelta(t, (groupStartGrace - time.Second).Seconds(), wait.Seconds(), 0.01, "a peer that has not recorded consensus holds the start")

	wait, err = build(self, recorded("app-2")).awaitGroupStart(context.Background(), sc)
	require.NoError(t, err)
	require.Zero(t, wait, "every peer recorded consensus")

	leaving := stale.DeepCopy()
	leaving.Name, leaving.Finalizers, leaving.DeletionTimestamp = "app-3", []string{Finalizer}, &metav1.Time{Time: now}
	wait, err = build(self, recorded("app-2"), leaving).awaitGroupStart(context.Background(), sc)
	require.NoError(t, err)
	require.Zero(t, wait, "a peer being deleted leaves the group: it does not hold the start")

	sc.now = now.Add(groupStartGrace)
	wait, err = build(self, stale).awaitGroupStart(context.Background(), sc)
	require.NoError(t, err)
	require.Zero(t, wait, "the grace is over: a silent peer does not hold the group")
}

func TestDecisionWritten(t *testing.T) {
	p := decisionWritten()
	blocked := drpc("app-1", drv1alpha1.ActionFailover, "c2", "c1")
	blocked.Generation = 2
	blocked.Status.ActionStartTime = &metav1.Time{Time: time.Now().Add(-time.Hour).Truncate(time.Second)} // the previous action
	blocked.Status.Conditions = []metav1.Condition{{Type: drv1alpha1.ConditionGlobalAction, Status: metav1.ConditionFalse, ObservedGeneration: 2}}
	decide := func(d *drv1alpha1.DRPlacementControl) {
		d.Status.ActionStartTime = &metav1.Time{Time: time.Now().Truncate(time.Second)}
		meta.SetStatusCondition(&d.Status.Conditions, metav1.Condition{Type: drv1alpha1.ConditionGlobalAction, Status: metav1.ConditionTrue, ObservedGeneration: 2})
	}
	recordedBefore := blocked.DeepCopy()
	recordedBefore.Status.Conditions[0].Status = metav1.ConditionTrue
	unlabelled := blocked.DeepCopy()
	unlabelled.Labels = nil
	for _, tc := range []struct {
		name   string
		old    *drv1alpha1.DRPlacementControl
		mutate func(*drv1alpha1.DRPlacementControl)
		want   bool
	}{
		{"the decision of a global DRPC", &blocked, decide, true},
		{"unlabelled: its own write starts its action", unlabelled, decide, false},
		{"consensus recorded earlier: groupStarted does not see this write", recordedBefore, decide, false},
		{"consensus without a new start", &blocked, func(d *drv1alpha1.DRPlacementControl) {
			meta.SetStatusCondition(&d.Status.Conditions, metav1.Condition{Type: drv1alpha1.ConditionGlobalAction, Status: metav1.ConditionTrue, ObservedGeneration: 2})
		}, false},
		{"asked again in the same update", &blocked, func(d *drv1alpha1.DRPlacementControl) { decide(d); d.Generation = 3 }, false},
		{"finalizer changed too", &blocked, func(d *drv1alpha1.DRPlacementControl) { decide(d); d.Finalizers = []string{Finalizer} }, false},
		{"being deleted", &blocked, func(d *drv1alpha1.DRPlacementControl) {
			decide(d)
			d.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.old.DeepCopy()
			tc.mutate(n)
			require.Equal(t, tc.want, p.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: n}))
		})
	}
	require.False(t, p.Create(event.CreateEvent{Object: &blocked}), "a DRPC is always reconciled when it appears")
}

func TestConsensusRecorded(t *testing.T) {
	p := consensusRecorded()
	blocked := drpc("app-1", drv1alpha1.ActionFailover, "c2", "c1")
	blocked.Generation = 2
	recorded := blocked.DeepCopy()
	recorded.Status.Conditions = []metav1.Condition{{Type: drv1alpha1.ConditionGlobalAction, Status: metav1.ConditionTrue, ObservedGeneration: 2}}
	stale := recorded.DeepCopy()
	stale.Generation = 3
	unlabelled, unlabelledRecorded := blocked.DeepCopy(), recorded.DeepCopy()
	unlabelled.Labels, unlabelledRecorded.Labels = nil, nil
	require.True(t, p.Update(event.UpdateEvent{ObjectOld: &blocked, ObjectNew: recorded}), "a peer records consensus")
	require.False(t, p.Update(event.UpdateEvent{ObjectOld: recorded, ObjectNew: recorded.DeepCopy()}), "recorded before")
	again := stale.DeepCopy()
	again.Status.Conditions[0].ObservedGeneration = 3
	require.True(t, p.Update(event.UpdateEvent{ObjectOld: stale, ObjectNew: again}), "a record for an older spec is no record")
	require.False(t, p.Update(event.UpdateEvent{ObjectOld: unlabelled, ObjectNew: unlabelledRecorded}), "not in a global group")
	require.False(t, p.Create(event.CreateEvent{Object: recorded}))
}
