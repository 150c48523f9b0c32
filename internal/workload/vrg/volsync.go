package vrg

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	groupsnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/workload/volsync"
)

// VolSyncVRGLabel marks the ReplicationGroupSources and
// ReplicationGroupDestinations a VRG created; its value is the VRG's name.
const VolSyncVRGLabel = volsync.VRGLabel

// pskRetry is how often a VRG waiting for its pre-shared key looks again:
// Secrets are not watched.
const pskRetry = 5 * time.Second

// isVolSyncClass reports whether a peer class replicates through VolSync: it
// names no storage replication (neither a replication ID nor a global group).
func isVolSyncClass(pc *drv1alpha1.PeerClass) bool {
	return pc != nil && !pc.Global && pc.ReplicationID == "" && pc.GroupReplicationID == ""
}

// volSyncMode reports whether the VRG takes the VolSync path: as primary every
// selected PVC maps to a VolSync peer class; as secondary the VRG carries the RD
// specs of the PVCs it receives.
func volSyncMode(s *scope) bool {
	if !s.primary() {
		return s.vrg.Spec.VolSync != nil && len(s.vrg.Spec.VolSync.RDSpecs) > 0
	}
	if len(s.pvcs) == 0 {
		return false
	}
	for _, p := range s.pvcs {
		if !isVolSyncClass(p.peerClass) {
			return false
		}
	}
	return true
}

// groupName names the RGS and RGD of one consistency group of a VRG, the same
// on both clusters: the VRG's name and a hash of the group key, short enough to
// be a label value.
func groupName(vrg, key string) string {
	sum := sha256.Sum256([]byte(key))
	suffix := "-cg-" + hex.EncodeToString(sum[:])[:8]
	if len(vrg)+len(suffix) > 63 {
		vrg = vrg[:63-len(suffix)]
	}
	return vrg + suffix
}

// consistencyGroupKey groups PVCs by their StorageClass, which both clusters
// name alike: one VolumeGroupSnapshot covers one driver.
func consistencyGroupKey(storageClass string) string { return storageClass }

// replicateVolSync drives the VRG's consistency groups as RGSs (primary) or
// RGDs (secondary) and deletes those of the other role.
func (r *Reconciler) replicateVolSync(ctx context.Context, s *scope) (ctrl.Result, error) {
	var err error
	if s.primary() {
		err = r.volSyncAsPrimary(ctx, s)
	} else {
		err = r.volSyncAsSecondary(ctx, s)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	s.pvcsProcessed = true
	return ctrl.Result{}, nil
}

func (r *Reconciler) volSyncAsPrimary(ctx context.Context, s *scope) error {
	groups := map[string][]pvcInfo{}
	for _, p := range s.pvcs {
		k := consistencyGroupKey(storageClassName(p.pvc))
		groups[k] = append(groups[k], p)
	}
	// The PVCs received as secondary become the application's: first back to
	// their last complete image, while the destinations still exist.
	if err := r.requirePSK(ctx, s); err != nil {
		return err
	}
	if err := r.rollback(ctx, s); err != nil {
		return err
	}
	if err := r.deleteRGDs(ctx, s, nil); err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, key := range slices.Sorted(maps.Keys(groups)) {
		name := groupName(s.vrg.Name, key)
		keep[name] = true
		class, err := r.groupSnapshotClass(ctx, s, groups[key][0].provisioner)
		if err != nil {
			return err
		}
		for _, p := range groups[key] {
			if err := r.protectPVC(ctx, s, p.pvc, key, true); err != nil {
				return flow.Transient(srv1alpha1.ReasonPatchFailed, err)
			}
		}
		rgs, err := r.ensureRGS(ctx, s, name, key, class)
		if err != nil {
			return err
		}
		s.sources = append(s.sources, rgs)
	}
	return r.deleteRGSs(ctx, s, keep)
}

func (r *Reconciler) volSyncAsSecondary(ctx context.Context, s *scope) error {
	// A destination writes into the PVCs: none may be in use. Unlike the
	// storage-replication path a relocate keeps them, as the base of the
	// next incremental cycle.
	var inUse []string
	for _, p := range s.pvcs {
		user, err := r.pvcUser(ctx, p.pvc)
		if err != nil {
			return flow.Transient(srv1alpha1.ReasonReadFailed, err)
		}
		if user != "" {
			inUse = append(inUse, fmt.Sprintf("%s (%s)", p.pvc.Name, user))
		}
	}
	if len(inUse) > 0 {
		s.progress = "PVCs still in use: " + strings.Join(inUse, ", ")
		return flow.Waiting(reasonGating, consensusRetry, "%s", s.progress)
	}
	if err := r.deleteRGSs(ctx, s, nil); err != nil {
		return err
	}
	if err := r.requirePSK(ctx, s); err != nil {
		return err
	}
	groups := map[string][]drv1alpha1.VolSyncReplicationDestinationSpec{}
	for _, spec := range s.vrg.Spec.VolSync.RDSpecs {
		k := consistencyGroupKey(ptr.Deref(spec.ProtectedPVC.StorageClassName, ""))
		groups[k] = append(groups[k], spec)
	}
	keep := map[string]bool{}
	for _, key := range slices.Sorted(maps.Keys(groups)) {
		name := groupName(s.vrg.Name, key)
		keep[name] = true
		rgd, err := r.ensureRGD(ctx, s, name, groups[key])
		if err != nil {
			return err
		}
		s.destinations = append(s.destinations, rgd)
	}
	return r.deleteRGDs(ctx, s, keep)
}

// groupSnapshotClass picks the VolumeGroupSnapshotClass of a driver among those
// spec.async.volumeSnapshotClassSelector selects, by name for a stable choice.
func (r *Reconciler) groupSnapshotClass(ctx context.Context, s *scope, driver string) (string, error) {
	sel := labels.Everything()
	if s.vrg.Spec.Async != nil {
		var err error
		if sel, err = metav1.LabelSelectorAsSelector(&s.vrg.Spec.Async.VolumeSnapshotClassSelector); err != nil {
			return "", flow.Stalled(drv1alpha1.ReasonError, "invalid spec.async.volumeSnapshotClassSelector: %w", err)
		}
	}
	list := &groupsnapshotv1.VolumeGroupSnapshotClassList{}
	if err := r.Client.List(ctx, list, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return "", flow.Transient(srv1alpha1.ReasonReadFailed, fmt.Errorf("listing VolumeGroupSnapshotClasses: %w", err))
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	for _, c := range list.Items {
		if c.Driver == driver {
			return c.Name, nil
		}
	}
	s.progress = fmt.Sprintf("no VolumeGroupSnapshotClass of driver %q matches spec.async.volumeSnapshotClassSelector", driver)
	return "", flow.Waiting(drv1alpha1.ReasonError, consensusRetry, "%s", s.progress)
}

func (r *Reconciler) ensureRGS(ctx context.Context, s *scope, name, key, class string) (*drv1alpha1.ReplicationGroupSource, error) {
	schedule, err := volsync.Schedule(s.vrg.Spec.Async.SchedulingInterval)
	if err != nil {
		return nil, flow.Stalled(drv1alpha1.ReasonError, "%w", err)
	}
	sel := s.vrg.Spec.PVCSelector.DeepCopy()
	if sel.MatchLabels == nil {
		sel.MatchLabels = map[string]string{}
	}
	sel.MatchLabels[drv1alpha1.ConsistencyGroupLabel] = key
	rgs := &drv1alpha1.ReplicationGroupSource{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.vrg.Namespace}}
	_, err = controllerutil.CreateOrPatch(ctx, r.Client, rgs, func() error {
		r.ownedMeta(s, rgs)
		// A final sync (before a relocate) replaces the schedule while the
		// VRG asks for it; the two exclude each other.
		if final := finalSync(s.vrg); final != "" {
			rgs.Spec.Trigger = &drv1alpha1.ReplicationSourceTriggerSpec{Manual: final}
		} else {
			rgs.Spec.Trigger = &drv1alpha1.ReplicationSourceTriggerSpec{Schedule: ptr.To(schedule)}
		}
		rgs.Spec.VolumeGroupSnapshotClassName = class
		rgs.Spec.VolumeGroupSnapshotSource = sel
		// Every destination the peer published; the group uses its own PVCs'.
		rgs.Spec.Destinations = nil
		if v := s.vrg.Spec.VolSync; v != nil {
			rgs.Spec.Destinations = slices.Clone(v.Destinations)
		}
		return nil
	})
	if err != nil {
		return nil, flow.Transient(srv1alpha1.ReasonWriteFailed, fmt.Errorf("writing ReplicationGroupSource %s: %w", name, err))
	}
	return rgs, nil
}

func (r *Reconciler) ensureRGD(ctx context.Context, s *scope, name string, specs []drv1alpha1.VolSyncReplicationDestinationSpec) (*drv1alpha1.ReplicationGroupDestination, error) {
	rgd := &drv1alpha1.ReplicationGroupDestination{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.vrg.Namespace}}
	_, err := controllerutil.CreateOrPatch(ctx, r.Client, rgd, func() error {
		r.ownedMeta(s, rgd)
		rgd.Spec.RDSpecs = specs
		if s.vrg.Spec.Async != nil {
			rgd.Spec.VolumeSnapshotClassSelector = s.vrg.Spec.Async.VolumeSnapshotClassSelector
		}
		return nil
	})
	if err != nil {
		return nil, flow.Transient(srv1alpha1.ReasonWriteFailed, fmt.Errorf("writing ReplicationGroupDestination %s: %w", name, err))
	}
	return rgd, nil
}

// ownedMeta marks an RGS or RGD as the VRG's and carries the diff annotation
// over, removing it when the VRG no longer has it.
func (r *Reconciler) ownedMeta(s *scope, o client.Object) {
	l := o.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[VolSyncVRGLabel] = s.vrg.Name
	o.SetLabels(l)
	a := o.GetAnnotations()
	if v, ok := s.vrg.Annotations[drv1alpha1.EnableDiffAnnotation]; ok {
		if a == nil {
			a = map[string]string{}
		}
		a[drv1alpha1.EnableDiffAnnotation] = v
	} else {
		delete(a, drv1alpha1.EnableDiffAnnotation)
	}
	o.SetAnnotations(a)
	// A controller reference, so that the VRG hears of its groups' cycles.
	_ = controllerutil.SetControllerReference(s.vrg, o, r.Client.Scheme())
}

// finalSync is the trigger of the final sync the VRG asks for, empty when none.
func finalSync(v *drv1alpha1.VolumeReplicationGroup) string {
	if v.Spec.VolSync == nil {
		return ""
	}
	return v.Spec.VolSync.FinalSync
}

// deleteRGSs deletes the VRG's ReplicationGroupSources not in keep.
func (r *Reconciler) deleteRGSs(ctx context.Context, s *scope, keep map[string]bool) error {
	list := &drv1alpha1.ReplicationGroupSourceList{}
	if err := r.Client.List(ctx, list, client.InNamespace(s.vrg.Namespace), client.MatchingLabels{VolSyncVRGLabel: s.vrg.Name}); err != nil {
		return flow.Transient(srv1alpha1.ReasonReadFailed, fmt.Errorf("listing ReplicationGroupSources: %w", err))
	}
	for i := range list.Items {
		if o := &list.Items[i]; !keep[o.Name] {
			if err := client.IgnoreNotFound(r.Client.Delete(ctx, o)); err != nil {
				return flow.Transient(srv1alpha1.ReasonWriteFailed, fmt.Errorf("deleting ReplicationGroupSource %s: %w", o.Name, err))
			}
		}
	}
	return nil
}

// deleteRGDs deletes the VRG's ReplicationGroupDestinations not in keep.
func (r *Reconciler) deleteRGDs(ctx context.Context, s *scope, keep map[string]bool) error {
	list := &drv1alpha1.ReplicationGroupDestinationList{}
	if err := r.Client.List(ctx, list, client.InNamespace(s.vrg.Namespace), client.MatchingLabels{VolSyncVRGLabel: s.vrg.Name}); err != nil {
		return flow.Transient(srv1alpha1.ReasonReadFailed, fmt.Errorf("listing ReplicationGroupDestinations: %w", err))
	}
	for i := range list.Items {
		if o := &list.Items[i]; !keep[o.Name] {
			if err := client.IgnoreNotFound(r.Client.Delete(ctx, o)); err != nil {
				return flow.Transient(srv1alpha1.ReasonWriteFailed, fmt.Errorf("deleting ReplicationGroupDestination %s: %w", o.Name, err))
			}
		}
	}
	return nil
}
