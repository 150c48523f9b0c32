package drpolicy_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	replicationv1alpha1 "github.com/csi-addons/kubernetes-csi-addons/api/replication.storage/v1alpha1"
	"github.com/stretchr/testify/require"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/setup"
	"github.com/siterecovery/siterecovery/test/env"
)

// TestPeerClassDiscovery discovers peer classes on two real workload API
// servers: a global label on one side only gives a non-global peer class; adding
// it on the other side, and then dropping the offloaded label, re-run
// discovery through the remote watches.
func TestPeerClassDiscovery(t *testing.T) {
	ctx := context.Background()
	e := env.New(t, env.Options{Backend: srv1alpha1.BackendOffloaded})
	for i, c := range []string{env.Primary, env.DR} {
		sid := fmt.Sprintf("sid-%d", i+1)
		require.NoError(t, e.Client(c).Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "sc-block",
			Labels: map[string]string{drv1alpha1.OffloadedLabel: "true", drv1alpha1.StorageIDLabel: sid}}, Provisioner: "array.csi"}))
		labels := map[string]string{drv1alpha1.StorageIDLabel: sid, drv1alpha1.GroupReplicationIDLabel: "replication-group-01"}
		if c == env.Primary {
			labels[drv1alpha1.GlobalLabel] = "true"
		}
		require.NoError(t, e.Client(c).Create(ctx, &replicationv1alpha1.VolumeGroupReplicationClass{ObjectMeta: metav1.ObjectMeta{Name: "offloaded-vgrc", Labels: labels},
			Spec: replicationv1alpha1.VolumeGroupReplicationClassSpec{Provisioner: "array.csi"}}))
	}
	e.StartQuorum(t, setup.QuorumOptions{ProbeInterval: time.Second})
	key := client.ObjectKey{Namespace: env.Namespace, Name: "policy"}
	require.NoError(t, e.Client(env.Quorum).Create(ctx, &drv1alpha1.DRPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
		Spec: drv1alpha1.DRPolicySpec{DRClusters: []string{env.Primary, env.DR}, SchedulingInterval: "0m"}}))

	want := drv1alpha1.PeerClass{ClusterIDs: []string{env.Primary, env.DR}, StorageClassName: "sc-block", StorageID: []string{"sid-1", "sid-2"},
		GroupReplicationID: "replication-group-01", Grouping: true, Offloaded: true}
	waitPeerClasses := func(what string, want ...drv1alpha1.PeerClass) {
		t.Helper()
		env.Eventually(t, 30*time.Second, what, func() error {
			p := &drv1alpha1.DRPolicy{}
			if err := e.Client(env.Quorum).Get(ctx, key, p); err != nil {
				return err
			}
			if !meta.IsStatusConditionTrue(p.Status.Conditions, srv1alpha1.ConditionValidated) {
				return fmt.Errorf("conditions %+v", p.Status.Conditions)
			}
			if fmt.Sprint(p.Status.PeerClasses) != fmt.Sprint(want) {
				return fmt.Errorf("peerClasses %+v, want %+v", p.Status.PeerClasses, want)
			}
			return nil
		})
	}
	waitPeerClasses("a non-global peer class: only one side is global", want)

	patchLabels(t, e.Client(env.DR), &replicationv1alpha1.VolumeGroupReplicationClass{}, "offloaded-vgrc", drv1alpha1.GlobalLabel, "true")
	want.Global = true
	waitPeerClasses("a global peer class once both sides are global", want)

	patchLabels(t, e.Client(env.Primary), &storagev1.StorageClass{}, "sc-block", drv1alpha1.OffloadedLabel, "false")
	waitPeerClasses("no peer class once the StorageClass is not offloaded")
}

func patchLabels(t *testing.T, c client.Client, obj client.Object, name, k, v string) {
	t.Helper()
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: name}, obj))
	before := obj.DeepCopyObject().(client.Object)
	l := obj.GetLabels()
	l[k] = v
	obj.SetLabels(l)
	require.NoError(t, c.Patch(context.Background(), obj, client.MergeFrom(before)))
}
