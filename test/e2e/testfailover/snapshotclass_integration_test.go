package testfailover_test

import (
	"fmt"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/testfailover"
	"github.com/siterecovery/siterecovery/test/env"
	snapshotsim "github.com/siterecovery/siterecovery/test/sim/snapshot"
)

// snapshotClass is the DR cluster's default VolumeSnapshotClass for the
// driver of the backing PVCs' StorageClass.
func snapshotClass() *snapshotv1.VolumeSnapshotClass {
	return &snapshotv1.VolumeSnapshotClass{
		ObjectMeta: metav1.ObjectMeta{Name: "sim-snapclass",
			Annotations: map[string]string{"snapshot.storage.kubernetes.io/is-default-class": "true"}},
		Driver: snapshotsim.DefaultDriver, DeletionPolicy: snapshotv1.VolumeSnapshotContentDelete,
	}
}

// noClassDeadline is far below the test's timeoutSeconds (600) and the
// default (180): failing at once, not by timeout, is what is checked.
const noClassDeadline = 20 * time.Second

// testNoSnapshotClass: with no VolumeSnapshotClass for the backing disks' CSI
// driver on the DR cluster (only one of another driver), a test failover fails
// in Snapshotting at once, naming the driver, the cluster and what to create,
// and snapshots nothing.
func (z *zone) testNoSnapshotClass(prod prodState) {
	t := z.t
	dr := z.Client(env.DR)
	require.NoError(t, dr.Delete(z.ctx, snapshotClass()))
	other := &snapshotv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: "other-driver"},
		Driver: "other.csi.example.com", DeletionPolicy: snapshotv1.VolumeSnapshotContentDelete}
	require.NoError(t, dr.Create(z.ctx, other))
	t.Cleanup(func() {
		require.NoError(t, dr.Delete(z.ctx, other))
		require.NoError(t, dr.Create(z.ctx, snapshotClass()))
	})

	name := z.testFailover("no-snapshot-class", env.DR, nil)
	var tf *srv1alpha1.TestFailover
	env.Eventually(t, noClassDeadline, name+" Failed", func() error {
		if tf = z.request(name); tf.Status.Phase != srv1alpha1.TestFailoverFailed {
			return fmt.Errorf("phase %q: %+v", tf.Status.Phase, meta.FindStatusCondition(tf.Status.Conditions, srv1alpha1.ConditionReady))
		}
		return nil
	})
	require.Equal(t, []string{"Pending", "Snapshotting", "CleaningUp", "Failed"}, phases(tf), "failed at once, through the cleanup")
	require.Equal(t, testfailover.ReasonNoSnapshotClass, readyReason(tf))
	msg := meta.FindStatusCondition(tf.Status.Conditions, srv1alpha1.ConditionReady).Message
	t.Logf("failed: %s", msg)
	for _, want := range []string{
		"no VolumeSnapshotClass for CSI driver " + snapshotsim.DefaultDriver,
		"PersistentVolume backing-vm-", // the bound backing volume's driver
		"create a VolumeSnapshotClass with driver: " + snapshotsim.DefaultDriver + " on cluster " + env.DR,
		"start the test again",
	} {
		require.Contains(t, msg, want)
	}
	require.Empty(t, tf.Status.Results, "nothing was booted, so nothing was verified")
	z.assertLeavesNothing(tf)
	z.assertProductionUntouched(prod)
}
