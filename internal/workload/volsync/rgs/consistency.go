package rgs

import (
	"context"
	"fmt"
	"time"

	groupsnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/freeze"
	"github.com/siterecovery/siterecovery/internal/workload/volsync"
)

// PointSource names a VolSync cycle's points in ConsistencyPoint.source.
const PointSource = "VolSyncCycle"

// cutPoll is how often a frozen cut reads its group snapshot: the guests wait.
const cutPoll = 100 * time.Millisecond

// reasonPointNotRecorded is the Warning event of a point the group's status
// could not take.
const reasonPointNotRecorded = "ConsistencyPointNotRecorded"

// RBAC for application-consistent cycles: the group of a source is found
// through its VRG; the group's running guests are frozen and thawed only in
// the application namespaces (the chart's volsync.applicationNamespaces), and
// the point goes to the local group's status.
// +kubebuilder:rbac:groups=dr.siterecovery.trilio.io,resources=volumereplicationgroups,verbs=get
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectiongroups,verbs=get
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectiongroups/status,verbs=patch
// +kubebuilder:rbac:groups=kubevirt.io,resources=virtualmachineinstances,verbs=get
// +kubebuilder:rbac:groups=subresources.kubevirt.io,resources=virtualmachineinstances/freeze;virtualmachineinstances/unfreeze,verbs=update,namespace=volsync-application-namespace

// takeSnapshot takes the cycle's VolumeGroupSnapshot. When the source's group
// asks for Application consistency, the snapshot is cut while the group's
// guests that run here are frozen, and they are thawed as soon as the
// snapshot has its creationTime (the storage cut it), not when it is ready;
// the point goes to the group's status.consistency.lastPoint, which pg-sync
// carries to the quorum copy. A guest that cannot be frozen, or a cut the
// storage does not make within freezeTimeoutSeconds, makes the point Crash
// with the reason; the cycle goes on with the snapshot either way. Other
// groups' cycles are crash-consistent and record nothing.
func (r *Reconciler) takeSnapshot(ctx context.Context, s *scope) (*groupsnapshotv1.VolumeGroupSnapshot, error) {
	// The cache may not have seen the snapshot a reconcile just created: a
	// second freeze for it would be one too many.
	vgs := &groupsnapshotv1.VolumeGroupSnapshot{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: s.rgs.Namespace, Name: s.cycle()}, vgs)
	if err == nil {
		return vgs, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, err
	}
	g, err := r.groupOf(ctx, s)
	if err != nil {
		return nil, err
	}
	if g == nil || g.Spec.Consistency == nil || g.Spec.Consistency.Mode != srv1alpha1.ConsistencyApplication || r.Freezer == nil {
		return r.createSnapshot(ctx, s)
	}
	vms, err := r.runningGuests(ctx, g)
	if err != nil {
		return nil, err
	}
	bound := time.Duration(g.Spec.Consistency.FreezeTimeoutSeconds) * time.Second
	var created *groupsnapshotv1.VolumeGroupSnapshot
	p, err := freeze.Point(ctx, r.Freezer, vms, freeze.Options{Bound: bound, Source: PointSource, Now: r.Clock.Now},
		func(ctx context.Context) error {
			var err error
			if created, err = r.createSnapshot(ctx, s); err != nil {
				return err
			}
			return r.waitCut(ctx, created)
		})
	if err != nil {
		if created == nil || ctx.Err() != nil {
			return nil, err // no snapshot: the next pass freezes again
		}
		// The guests are thawed; the storage cuts the snapshot whenever it
		// gets to it, and the cycle goes on with it rather than freezing again.
		p = freeze.CrashPoint(PointSource, r.Clock.Now(), fmt.Sprintf("VolumeGroupSnapshot %s was not cut while the guests were frozen (at most %s, freezeTimeoutSeconds); they were thawed: %v", created.Name, bound, err))
	}
	if err := r.recordPoint(ctx, g, &p); err != nil {
		// The snapshot stands; losing its record must not hold the cycle.
		s.events = append(s.events, flow.Event{Type: corev1.EventTypeWarning, Reason: reasonPointNotRecorded,
			Message: fmt.Sprintf("%s point of VolumeGroupSnapshot %s not recorded in ProtectionGroup %s/%s: %v", p.Consistency, created.Name, g.Namespace, g.Name, err)})
	}
	return created, nil
}

// groupOf is the local ProtectionGroup whose VMs use the source's PVCs: the
// one its VRG (label volsync.VRGLabel) names, in the VRG's DR namespace. A
// source without them (not made by a VRG) has none.
func (r *Reconciler) groupOf(ctx context.Context, s *scope) (*srv1alpha1.ProtectionGroup, error) {
	name := s.rgs.Labels[volsync.VRGLabel]
	if name == "" {
		return nil, nil
	}
	vrg := &drv1alpha1.VolumeReplicationGroup{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: s.rgs.Namespace, Name: name}, vrg); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	ns := vrg.Labels[srv1alpha1.DRNamespaceLabel]
	if ns == "" || vrg.Spec.ProtectionGroupRef == "" {
		return nil, nil
	}
	g := &srv1alpha1.ProtectionGroup{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: vrg.Spec.ProtectionGroupRef}, g); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return g, nil
}

// runningGuests are the group's VMs whose VMI runs on this cluster; a
// stopped VM writes nothing, so its disks are consistent as they are.
func (r *Reconciler) runningGuests(ctx context.Context, g *srv1alpha1.ProtectionGroup) ([]types.NamespacedName, error) {
	var vms []types.NamespacedName
	for _, ref := range g.Spec.VirtualMachines {
		key := types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}
		vmi := &kubevirtv1.VirtualMachineInstance{}
		err := r.APIReader.Get(ctx, key, vmi)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("reading VirtualMachineInstance %s: %w", key, err)
		case vmi.Status.Phase == kubevirtv1.Running:
			vms = append(vms, key)
		}
	}
	return vms, nil
}

// waitCut waits, within ctx, until the storage cut vgs (status.creationTime).
func (r *Reconciler) waitCut(ctx context.Context, vgs *groupsnapshotv1.VolumeGroupSnapshot) error {
	err := wait.PollUntilContextCancel(ctx, cutPoll, true, func(ctx context.Context) (bool, error) {
		cur := &groupsnapshotv1.VolumeGroupSnapshot{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(vgs), cur); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		if cur.Status != nil && cur.Status.Error != nil {
			return false, fmt.Errorf("VolumeGroupSnapshot %s failed: %s", vgs.Name, ptr.Deref(cur.Status.Error.Message, "no message"))
		}
		return cur.Status != nil && cur.Status.CreationTime != nil, nil
	})
	if err != nil {
		return fmt.Errorf("VolumeGroupSnapshot %s not cut: %w", vgs.Name, err)
	}
	return nil
}

// recordPoint patches p into the group's status.consistency.lastPoint, that
// one field only: the group's own controller writes the rest.
func (r *Reconciler) recordPoint(ctx context.Context, g *srv1alpha1.ProtectionGroup, p *srv1alpha1.ConsistencyPoint) error {
	before := g.DeepCopy()
	if g.Status.Consistency == nil {
		g.Status.Consistency = &srv1alpha1.ConsistencyStatus{}
	}
	g.Status.Consistency.LastPoint = p.DeepCopy()
	return r.Client.Status().Patch(ctx, g, client.MergeFrom(before))
}
