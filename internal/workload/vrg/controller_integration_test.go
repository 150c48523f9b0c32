package vrg_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	replicationv1alpha1 "github.com/csi-addons/kubernetes-csi-addons/api/replication.storage/v1alpha1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/workload/vrg"
)

// TestGlobalVGR runs the global VGR flows (enable, failover, relocate, disable) on one workload cluster. Each subtest
// uses its own replication group, so they share the cluster.
func TestGlobalVGR(t *testing.T) {
	c := startCluster(t)
	t.Run("EnableJoinSecondaryGatingDelete", func(t *testing.T) { enableJoinGateDelete(t, c) })
	t.Run("ConsensusOnFailoverToThisCluster", func(t *testing.T) { consensusOnFailover(t, c) })
	t.Run("SchedulingInterval", func(t *testing.T) { schedulingInterval(t, c) })
	t.Run("DifferentGroupReplicationIDs", func(t *testing.T) { differentGroups(t, c) })
}

func enableJoinGateDelete(t *testing.T, c client.Client) {
	ctx := t.Context()
	const grID = "replication-group-01"
	vgrName := drv1alpha1.GlobalVGRName(grID)
	storage(t, c, "sc-block", "sid-1", classNoConditions, grID, "0m")
	pc := peerClass("sc-block", "sid-1", grID)
	apps := []string{"app-1", "app-2", "app-3"}
	for _, app := range apps {
		namespace(t, c, app+"-ns")
		require.NoError(t, c.Create(ctx, newPVC(app+"-ns", app+"-pvc", app, "sc-block")))
	}

	// Enable: both VRGs at once, so that both try to create the VGR.
	errs := make(chan error, 2)
	for _, app := range apps[:2] {
		go func() { errs <- c.Create(ctx, newVRG(app+"-ns", app, app, drv1alpha1.Primary, "0m", pc)) }()
	}
	require.NoError(t, errors.Join(<-errs, <-errs))
	for _, app := range apps[:2] {
		ns := app + "-ns"
		eventually(t, app+" primary", hasState(c, ns, app, drv1alpha1.PrimaryState))
		v := getVRG(t, c, ns, app)
		require.Equal(t, vgrName, v.Labels[drv1alpha1.GlobalVGRLabel], "%s self-labels", app)
		require.Contains(t, v.Finalizers, vrg.VRGFinalizer)
		requirePrimaryConditions(t, v)
		pvc := &corev1.PersistentVolumeClaim{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: app + "-pvc"}, pvc))
		require.Equal(t, grID, pvc.Labels[drv1alpha1.ConsistencyGroupLabel])
		require.Contains(t, pvc.Finalizers, vrg.PVCFinalizer)
		require.Equal(t, app, pvc.Annotations[vrg.PVCOwnerAnnotation])
	}
	vgrs := &replicationv1alpha1.VolumeGroupReplicationList{}
	require.NoError(t, c.List(ctx, vgrs, client.InNamespace(operatorNS)))
	require.Len(t, vgrs.Items, 1, "exactly one global VGR for two VRGs")
	shared := vgrs.Items[0]
	require.Equal(t, vgrName, shared.Name)
	require.Equal(t, "true", shared.Labels[drv1alpha1.CreatedByRamenLabel])
	require.Empty(t, shared.OwnerReferences)
	require.Equal(t, classNoConditions, shared.Spec.VolumeGroupReplicationClassName)
	require.True(t, shared.Spec.External)
	require.False(t, shared.Spec.AutoResync)
	require.Equal(t, replicationv1alpha1.Primary, shared.Spec.ReplicationState)
	require.Equal(t, &metav1.LabelSelector{MatchLabels: map[string]string{drv1alpha1.ConsistencyGroupLabel: grID}}, shared.Spec.Source.Selector)
	require.Empty(t, shared.Status.Conditions, "the quiet simulator reports no conditions")

	// app-3 joins later and picks up the existing VGR.
	require.NoError(t, c.Create(ctx, newVRG("app-3-ns", "app-3", "app-3", drv1alpha1.Primary, "0m", pc)))
	eventually(t, "app-3 primary", hasState(c, "app-3-ns", "app-3", drv1alpha1.PrimaryState))
	requirePrimaryConditions(t, getVRG(t, c, "app-3-ns", "app-3"))
	again, err := getVGR(c, vgrName)
	require.NoError(t, err)
	require.Equal(t, shared.UID, again.UID, "app-3 uses the VGR that exists")

	// Secondary gating: app-2's PVC is still mounted by a pod.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "app-2-pod", Namespace: "app-2-ns"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "app"}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "app-2-pvc"},
			}}},
		},
	}
	require.NoError(t, c.Create(ctx, pod))
	for _, app := range apps {
		setState(t, c, app+"-ns", app, drv1alpha1.Secondary, drv1alpha1.ActionFailover)
	}
	for _, app := range []string{"app-1", "app-3"} {
		eventually(t, app+" GlobalSecondary", hasCondition(c, app+"-ns", app, drv1alpha1.ConditionGlobalSecondary,
			metav1.ConditionTrue, drv1alpha1.ReasonPVCsNotInUse, drv1alpha1.MessagePVCsNotInUse))
		eventually(t, app+" GlobalState", hasCondition(c, app+"-ns", app, drv1alpha1.ConditionGlobalState,
			metav1.ConditionTrue, drv1alpha1.ReasonConsensusReached, "Consensus reached for state secondary"))
	}
	eventually(t, "app-2 PVCs in use", hasCondition(c, "app-2-ns", "app-2", drv1alpha1.ConditionGlobalSecondary,
		metav1.ConditionFalse, drv1alpha1.ReasonPVCsInUse, drv1alpha1.MessagePVCsInUse))
	consistently(t, "VGR stays primary while app-2's PVC is mounted", 2*time.Second,
		vgrState(c, vgrName, replicationv1alpha1.Primary, replicationv1alpha1.PrimaryState))
	for _, app := range apps {
		require.NoError(t, hasState(c, app+"-ns", app, drv1alpha1.UnknownState)())
		require.NoError(t, hasCondition(c, app+"-ns", app, drv1alpha1.ConditionDataReady, metav1.ConditionFalse, drv1alpha1.ReasonProgressing, "")())
	}

	require.NoError(t, c.Delete(ctx, pod, client.GracePeriodSeconds(0)))
	eventually(t, "VGR secondary", vgrState(c, vgrName, replicationv1alpha1.Secondary, replicationv1alpha1.SecondaryState))
	for _, app := range apps {
		ns := app + "-ns"
		eventually(t, app+" secondary", hasState(c, ns, app, drv1alpha1.SecondaryState))
		eventually(t, app+" DataReady", hasCondition(c, ns, app, drv1alpha1.ConditionDataReady,
			metav1.ConditionTrue, drv1alpha1.ReasonReplicated, drv1alpha1.MessagePVCReady))
		eventually(t, app+" PVC released", func() error {
			pvc := &corev1.PersistentVolumeClaim{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: app + "-pvc"}, pvc); err != nil {
				return err
			}
			if controllerutil.ContainsFinalizer(pvc, vrg.PVCFinalizer) || pvc.Annotations[vrg.PVCOwnerAnnotation] != "" {
				return fmt.Errorf("PVC still held: %v %v", pvc.Finalizers, pvc.Annotations)
			}
			return nil
		})
	}
	kept, err := getVGR(c, vgrName)
	require.NoError(t, err)
	require.Equal(t, shared.UID, kept.UID, "the VGR is updated, never recreated, on the way to secondary")

	// Deletion: the VGR stays while any VRG of the group is alive.
	for _, app := range apps[:2] {
		require.NoError(t, c.Delete(ctx, getVRG(t, c, app+"-ns", app)))
		eventually(t, app+" deleted", func() error {
			err := c.Get(ctx, client.ObjectKey{Namespace: app + "-ns", Name: app}, &drv1alpha1.VolumeReplicationGroup{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("still there (%w)", err)
		})
		_, err := getVGR(c, vgrName)
		require.NoError(t, err, "VGR kept while app-3 lives")
	}
	require.NoError(t, c.Delete(ctx, getVRG(t, c, "app-3-ns", "app-3")))
	eventually(t, "VGR deleted with the last VRG", func() error {
		if _, err := getVGR(c, vgrName); !apierrors.IsNotFound(err) {
			return fmt.Errorf("VGR still there (%w)", err)
		}
		return nil
	})
}

func requirePrimaryConditions(t *testing.T, v *drv1alpha1.VolumeReplicationGroup) {
	t.Helper()
	want := map[string][3]string{
		drv1alpha1.ConditionDataReady:       {"True", drv1alpha1.ReasonReady, drv1alpha1.MessagePVCReady},
		drv1alpha1.ConditionDataProtected:   {"True", drv1alpha1.ReasonDataProtected, drv1alpha1.MessagePVCDataProtected},
		drv1alpha1.ConditionGlobalState:     {"True", drv1alpha1.ReasonConsensusReached, "Consensus reached for state primary"},
		drv1alpha1.ConditionGlobalSecondary: {"True", drv1alpha1.ReasonUnused, drv1alpha1.MessageUnusedWhenPrimary},
	}
	for typ, w := range want {
		got := meta.FindStatusCondition(v.Status.Conditions, typ)
		require.NotNil(t, got, typ)
		require.Equal(t, w, [3]string{string(got.Status), got.Reason, got.Message}, "%s/%s %s", v.Namespace, v.Name, typ)
	}
	require.Len(t, v.Status.ProtectedPVCs, 1)
	for _, typ := range []string{drv1alpha1.ConditionDataReady, drv1alpha1.ConditionDataProtected} {
		got := meta.FindStatusCondition(v.Status.ProtectedPVCs[0].Conditions, typ)
		require.NotNil(t, got, typ)
		require.Equal(t, want[typ], [3]string{string(got.Status), got.Reason, got.Message}, "PVC %s", typ)
		require.Equal(t, v.Generation, got.ObservedGeneration)
	}
}

// consensusOnFailover: two secondary VRGs with the propagated label and no PVCs are
// steady-state secondaries; app-a turning primary waits for app-b.
func consensusOnFailover(t *testing.T, c client.Client) {
	ctx := t.Context()
	const grID = "replication-group-02"
	vgrName := drv1alpha1.GlobalVGRName(grID)
	storage(t, c, "sc-block-2", "sid-2", classNoConditions2, grID, "0m")
	pc := peerClass("sc-block-2", "sid-2", grID)
	for _, app := range []string{"app-a", "app-b"} {
		namespace(t, c, app+"-ns")
		v := newVRG(app+"-ns", app, app, drv1alpha1.Secondary, "0m", pc)
		v.Labels = map[string]string{drv1alpha1.GlobalVGRLabel: vgrName} // as the DRPC writes it
		require.NoError(t, c.Create(ctx, v))
	}
	for _, app := range []string{"app-a", "app-b"} {
		ns := app + "-ns"
		eventually(t, app+" secondary", hasState(c, ns, app, drv1alpha1.SecondaryState))
		for _, typ := range []string{drv1alpha1.ConditionDataReady, drv1alpha1.ConditionDataProtected} {
			require.NoError(t, hasCondition(c, ns, app, typ, metav1.ConditionTrue, drv1alpha1.ReasonUnused, drv1alpha1.MessageNoPVCsAsSecondary)())
		}
		require.NoError(t, hasCondition(c, ns, app, drv1alpha1.ConditionGlobalSecondary, metav1.ConditionTrue, drv1alpha1.ReasonPVCsNotInUse, drv1alpha1.MessagePVCsNotInUse)())
		require.NoError(t, hasCondition(c, ns, app, drv1alpha1.ConditionGlobalState, metav1.ConditionTrue, drv1alpha1.ReasonConsensusReached, "Consensus reached for state secondary")())
		require.Empty(t, getVRG(t, c, ns, app).Status.ProtectedPVCs)
	}
	_, err := getVGR(c, vgrName)
	require.True(t, apierrors.IsNotFound(err), "no VGR on a cluster without PVCs: %v", err)

	// Failover to this cluster: the PVCs appear, app-a is promoted first.
	for _, app := range []string{"app-a", "app-b"} {
		require.NoError(t, c.Create(ctx, newPVC(app+"-ns", app+"-pvc", app, "sc-block-2")))
	}
	setState(t, c, "app-a-ns", "app-a", drv1alpha1.Primary, drv1alpha1.ActionFailover)
	eventually(t, "app-a waits for app-b", hasCondition(c, "app-a-ns", "app-a", drv1alpha1.ConditionGlobalState,
		metav1.ConditionFalse, drv1alpha1.ReasonConsensusNotReached, "Waiting for VRGs to agree on state primary, pending: app-b-ns/app-b"))
	require.NoError(t, hasCondition(c, "app-a-ns", "app-a", drv1alpha1.ConditionDataReady, metav1.ConditionFalse, drv1alpha1.ReasonProgressing, "")())
	consistently(t, "no VGR before consensus", time.Second, func() error {
		if _, err := getVGR(c, vgrName); !apierrors.IsNotFound(err) {
			return fmt.Errorf("VGR exists or unreadable: %w", err)
		}
		return nil
	})

	setState(t, c, "app-b-ns", "app-b", drv1alpha1.Primary, drv1alpha1.ActionFailover)
	for _, app := range []string{"app-a", "app-b"} {
		eventually(t, app+" primary", hasState(c, app+"-ns", app, drv1alpha1.PrimaryState))
		requirePrimaryConditions(t, getVRG(t, c, app+"-ns", app))
	}
	require.NoError(t, vgrState(c, vgrName, replicationv1alpha1.Primary, replicationv1alpha1.PrimaryState)())
}

// schedulingInterval: with 0m the VGR's state is enough; with a
// non-zero interval the VGR's conditions are checked, so an array that reports none
// leaves the VRG progressing and one that reports them makes it ready.
func schedulingInterval(t *testing.T, c client.Client) {
	ctx := t.Context()
	storage(t, c, "sc-quiet", "sid-quiet", classNoConditions5m, "rg-quiet", "5m")
	storage(t, c, "sc-cond", "sid-cond", classConditions, "rg-cond", "5m")
	namespace(t, c, "interval-ns")
	require.NoError(t, c.Create(ctx, newPVC("interval-ns", "quiet-pvc", "quiet", "sc-quiet")))
	require.NoError(t, c.Create(ctx, newPVC("interval-ns", "cond-pvc", "cond", "sc-cond")))
	require.NoError(t, c.Create(ctx, newVRG("interval-ns", "quiet", "quiet", drv1alpha1.Primary, "5m", peerClass("sc-quiet", "sid-quiet", "rg-quiet"))))
	require.NoError(t, c.Create(ctx, newVRG("interval-ns", "cond", "cond", drv1alpha1.Primary, "5m", peerClass("sc-cond", "sid-cond", "rg-cond"))))

	eventually(t, "cond ready from VGR conditions", hasState(c, "interval-ns", "cond", drv1alpha1.PrimaryState))
	requirePrimaryConditions(t, getVRG(t, c, "interval-ns", "cond"))

	eventually(t, "quiet VGR primary", vgrState(c, drv1alpha1.GlobalVGRName("rg-quiet"), replicationv1alpha1.Primary, replicationv1alpha1.PrimaryState))
	eventually(t, "quiet not ready without Completed", hasCondition(c, "interval-ns", "quiet", drv1alpha1.ConditionDataReady,
		metav1.ConditionFalse, drv1alpha1.ReasonProgressing, "PVC interval-ns/quiet-pvc: VolumeGroupReplication global-rg-quiet has not completed the transition to primary"))
}

// differentGroups: PVCs of two replication groups in one VRG are an error.
func differentGroups(t *testing.T, c client.Client) {
	ctx := t.Context()
	storage(t, c, "sc-x", "sid-x", "vgrc-x", "rg-x", "0m")
	storage(t, c, "sc-y", "sid-y", "vgrc-y", "rg-y", "0m")
	namespace(t, c, "mixed-ns")
	require.NoError(t, c.Create(ctx, newPVC("mixed-ns", "pvc-x", "mixed", "sc-x")))
	require.NoError(t, c.Create(ctx, newPVC("mixed-ns", "pvc-y", "mixed", "sc-y")))
	require.NoError(t, c.Create(ctx, newVRG("mixed-ns", "mixed", "mixed", drv1alpha1.Primary, "0m",
		peerClass("sc-x", "sid-x", "rg-x"), peerClass("sc-y", "sid-y", "rg-y"))))
	msg := "PVCs map to different GroupReplicationIDs: mixed-ns/pvc-x=rg-x, mixed-ns/pvc-y=rg-y"
	eventually(t, "error condition", hasCondition(c, "mixed-ns", "mixed", drv1alpha1.ConditionDataReady, metav1.ConditionFalse, drv1alpha1.ReasonError, msg))
	v := getVRG(t, c, "mixed-ns", "mixed")
	require.NotContains(t, v.Labels, drv1alpha1.GlobalVGRLabel)
	require.Equal(t, drv1alpha1.UnknownState, v.Status.State)
	for _, name := range []string{"global-rg-x", "global-rg-y"} {
		_, err := getVGR(c, name)
		require.True(t, apierrors.IsNotFound(err), "%s: %v", name, err)
	}
}
