package snapshot

import (
	"context"
	"fmt"
	"time"

	groupsnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/siterecovery/siterecovery/test/sim/blockstore"
)

// What the snapshot-controller and a driver's csi-snapshotter sidecar tell
// each other on a content (external-snapshotter pkg/utils/util.go).
const (
	// contentFinalizer is the snapshot-controller's; the sidecar removes it
	// once the storage snapshot is gone.
	contentFinalizer      = "snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection"
	groupContentFinalizer = "groupsnapshot.storage.kubernetes.io/volumegroupsnapshotcontent-bound-protection"
	// annBeingDeleted is set by the snapshot-controller before it deletes a
	// content whose snapshot was deleted: the sidecar deletes the storage
	// snapshot only then.
	annBeingDeleted      = "snapshot.storage.kubernetes.io/volumesnapshot-being-deleted"
	annGroupBeingDeleted = "groupsnapshot.storage.kubernetes.io/volumegroupsnapshot-being-deleted"
	// annBeingCreated is the sidecar's while a CreateSnapshot call is in
	// flight; a content that has it is not deleted. The simulated driver cuts
	// a snapshot within one reconcile, so it never sets it, but honours it.
	annBeingCreated      = "snapshot.storage.kubernetes.io/volumesnapshot-being-created"
	annGroupBeingCreated = "groupsnapshot.storage.kubernetes.io/volumegroupsnapshot-being-created"
	// annGroupHandle marks a member content the snapshot-controller made
	// from a group content's status; the sidecar never creates its snapshot.
	annGroupHandle = "groupsnapshot.storage.k8s.io/volumeGroupSnapshotHandle"
)

// snapshotID is the storage's name of the snapshot cut for a VolumeSnapshot:
// the sidecar names a CreateSnapshot request after the snapshot's UID
// (pkg/sidecar-controller/csi_handler.go, makeSnapshotName), and the CSI spec
// makes CreateSnapshot idempotent by name, so a retry gets the same snapshot.
func snapshotID(snapshotUID types.UID) string { return "snap-" + string(snapshotUID) }

// groupSnapshotID and memberSnapshotID are the same for a group snapshot
// (csi_handler.go, makeGroupSnapshotName) and the snapshot of its i-th volume.
func groupSnapshotID(groupUID types.UID) string { return "groupsnap-" + string(groupUID) }

func memberSnapshotID(groupUID types.UID, i int) string {
	return fmt.Sprintf("snap-%s-%d", groupUID, i)
}

// shouldDelete is the sidecar's rule for a content being deleted
// (pkg/sidecar-controller/snapshot_controller.go, shouldDelete, and
// groupsnapshot_helper.go, shouldDeleteGroupSnapshotContent): an unbound
// pre-provisioned content goes at once; otherwise only after the
// snapshot-controller marked it being deleted, and never while a create call
// is in flight.
func shouldDelete(m metav1.ObjectMeta, unboundPreProvisioned bool, beingCreated, beingDeleted string) bool {
	if m.DeletionTimestamp == nil {
		return false
	}
	if unboundPreProvisioned {
		return true
	}
	if metav1.HasAnnotation(m, beingCreated) {
		return false
	}
	return metav1.HasAnnotation(m, beingDeleted)
}

// volume is the PersistentVolume whose CSI volume handle is handle: the
// driver's volume a content names. The simulated storage is one for the
// whole zone, so the PV's driver is not compared. Nil when there is none.
func volume(ctx context.Context, r client.Reader, handle string) (*corev1.PersistentVolume, error) {
	list := &corev1.PersistentVolumeList{}
	if err := r.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing PersistentVolumes: %w", err)
	}
	for i := range list.Items {
		if csi := list.Items[i].Spec.CSI; csi != nil && csi.VolumeHandle == handle {
			return &list.Items[i], nil
		}
	}
	return nil, nil
}

// cut is one snapshot on the simulated storage.
type cut struct {
	size    *int64
	created *int64
}

// findSnapshot answers a ListSnapshots call for handle (what the sidecar asks
// for a pre-provisioned content, GetSnapshotStatus): the storage keeps no
// catalogue of its own, so a snapshot exists while a content other than self
// reports it cut, a group content lists it, or Data holds its blocks.
func findSnapshot(ctx context.Context, r client.Reader, data *blockstore.Store, handle, self string) (*cut, error) {
	contents := &snapshotv1.VolumeSnapshotContentList{}
	if err := r.List(ctx, contents); err != nil {
		return nil, fmt.Errorf("listing VolumeSnapshotContents: %w", err)
	}
	for _, c := range contents.Items {
		if c.Name != self && c.Status != nil && ptr.Deref(c.Status.SnapshotHandle, "") == handle && c.Status.RestoreSize != nil {
			return &cut{size: c.Status.RestoreSize, created: c.Status.CreationTime}, nil
		}
	}
	groups := &groupsnapshotv1.VolumeGroupSnapshotContentList{}
	if err := r.List(ctx, groups); err != nil {
		return nil, fmt.Errorf("listing VolumeGroupSnapshotContents: %w", err)
	}
	for _, g := range groups.Items {
		if g.Status == nil {
			continue
		}
		for _, info := range g.Status.VolumeSnapshotInfoList {
			if info.SnapshotHandle == handle {
				return &cut{size: info.RestoreSize, created: info.CreationTime}, nil
			}
		}
	}
	if data != nil && data.Exists(handle) {
		return &cut{}, nil
	}
	return nil, nil
}

// errorStatus is what the sidecar writes when a CSI call failed
// (updateContentErrorStatusWithEvent): not ready, with the message.
func errorStatus(now time.Time, msg string) *snapshotv1.VolumeSnapshotError {
	return &snapshotv1.VolumeSnapshotError{Time: ptr.To(metav1.NewTime(now)), Message: &msg}
}

// sameError reports whether err already says msg, so that a retry does not
// rewrite the status (the sidecar compares the same way).
func sameError(err *snapshotv1.VolumeSnapshotError, msg string) bool {
	return err != nil && ptr.Deref(err.Message, "") == msg
}
