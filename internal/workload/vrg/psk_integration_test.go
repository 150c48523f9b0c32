package vrg_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/workload/vrg"
)

// TestVolSyncKeyCopiedOnlyToItsGroup: pg-controller copies a DR namespace's
// VolSync pre-shared key into a VRG's namespace only for a VRG of the group
// the key belongs to, whose VMs live in that namespace. A VRG that someone
// able to create VRGs in namespace "intruder" labels with DR namespace
// dr-y and points at dr-y's group gets no Secret and a DataReady condition
// that says why; the group's own VRG gets the key.
func TestVolSyncKeyCopiedOnlyToItsGroup(t *testing.T) {
	c := startCluster(t)
	ctx := t.Context()
	const sc = "cephfs-psk"
	require.NoError(t, c.Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: sc}, Provisioner: "cephfs.csi.example.com"}))
	for _, ns := range []string{"dr-y", "app-y", "intruder"} {
		namespace(t, c, ns)
	}
	// What the quorum tier of dr-y wrote: its group's copy (the VMs of app-y)
	// and the key of DRPC "d" of group g, and of DRPC "other" of group g2.
	require.NoError(t, c.Create(ctx, &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "dr-y", Name: "g"},
		Spec: srv1alpha1.ProtectionGroupSpec{VirtualMachines: []srv1alpha1.VirtualMachineReference{{Namespace: "app-y", Name: "vm-1"}}}}))
	key := func(drpc, group string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "dr-y", Name: drv1alpha1.VolSyncPSKSecretName(drpc),
			Labels: map[string]string{srv1alpha1.ManagedByLabel: srv1alpha1.ManagedByValue, srv1alpha1.ProtectionGroupLabel: group}},
			Data: map[string][]byte{drv1alpha1.VolSyncPSKKey: []byte("volsync:" + drpc)}}
	}
	require.NoError(t, c.Create(ctx, key("d", "g")))
	require.NoError(t, c.Create(ctx, key("other", "g2")))

	volSyncVRG := func(ns, name string) {
		t.Helper()
		require.NoError(t, c.Create(ctx, newPVC(ns, "disk-"+name, name, sc)))
		v := newVRG(ns, name, name, drv1alpha1.Primary, "1h", drv1alpha1.PeerClass{StorageClassName: sc})
		v.Labels = map[string]string{srv1alpha1.DRNamespaceLabel: "dr-y"}
		v.Spec.ProtectionGroupRef = "g"
		require.NoError(t, c.Create(ctx, v))
	}
	refusedWith := func(ns, name, says string) {
		t.Helper()
		eventually(t, ns+"/"+name+" refused", func() error {
			if err := hasCondition(c, ns, name, drv1alpha1.ConditionDataReady, metav1.ConditionFalse, vrg.ReasonKeyRefused, "")(); err != nil {
				return err
			}
			if got := meta.FindStatusCondition(getVRG(t, c, ns, name).Status.Conditions, drv1alpha1.ConditionDataReady); !strings.Contains(got.Message, says) {
				return fmt.Errorf("DataReady says %q", got.Message)
			}
			return nil
		})
		// The refusal is decided before the copy, in the same reconcile.
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: drv1alpha1.VolSyncPSKSecretName(name)}, &corev1.Secret{})
		require.True(t, apierrors.IsNotFound(err), "the key was copied into %s: %v", ns, err)
	}

	// The attack: a VRG in another namespace, labelled to point at dr-y's group.
	volSyncVRG("intruder", "d")
	refusedWith("intruder", "d", "ProtectionGroup dr-y/g protects VirtualMachine app-y/vm-1, outside namespace intruder")
	// A VRG of the group's namespace, named after another group's DRPC.
	volSyncVRG("app-y", "other")
	refusedWith("app-y", "other", `the key belongs to group "g2", not to g`)

	// The group's own VRG gets its key.
	volSyncVRG("app-y", "d")
	eventually(t, "the key copied into app-y", func() error {
		s := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "app-y", Name: drv1alpha1.VolSyncPSKSecretName("d")}, s); err != nil {
			return err
		}
		if string(s.Data[drv1alpha1.VolSyncPSKKey]) != "volsync:d" {
			return fmt.Errorf("the copy holds another key")
		}
		return nil
	})
}
