package vrg

import (
	"context"
	"fmt"
	"slices"
	"sort"

	replicationv1alpha1 "github.com/csi-addons/kubernetes-csi-addons/api/replication.storage/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// schedulingIntervalParameter is the VolumeGroupReplicationClass parameter Ramen
// matches against the VRG's schedulingInterval.
const schedulingIntervalParameter = "schedulingInterval"

// loadVGR reads the shared VGR of the VRG's group, if any.
func (r *Reconciler) loadVGR(ctx context.Context, s *scope) error {
	name := s.globalName()
	if name == "" {
		return nil
	}
	vgr := &replicationv1alpha1.VolumeGroupReplication{}
	switch err := r.Client.Get(ctx, client.ObjectKey{Namespace: r.Options.OperatorNamespace, Name: name}, vgr); {
	case apierrors.IsNotFound(err):
		s.vgr = nil
	case err != nil:
		return flow.Transient(srv1alpha1.ReasonReadFailed, fmt.Errorf("reading VolumeGroupReplication %s: %w", name, err))
	default:
		s.vgr = vgr
	}
	return nil
}

// ensureVGR makes the shared VGR ask for state, creating it when create is set and it
// does not exist. A peer creating it at the same moment is fine: the
// VGR it created is read back and used.
func (r *Reconciler) ensureVGR(ctx context.Context, s *scope, state replicationv1alpha1.ReplicationState, create bool) error {
	if s.vgr == nil {
		if !create {
			return nil
		}
		return r.createVGR(ctx, s, state)
	}
	if s.vgr.Spec.ReplicationState == state {
		s.vgrUpdated = true
		return nil
	}
	patched := s.vgr.DeepCopy()
	patched.Spec.ReplicationState = state
	if err := r.Client.Patch(ctx, patched, client.MergeFromWithOptions(s.vgr, client.MergeFromWithOptimisticLock{})); err != nil {
		return flow.Transient(srv1alpha1.ReasonPatchFailed, fmt.Errorf("setting VolumeGroupReplication %s to %s: %w", s.vgr.Name, state, err))
	}
	r.Recorder.Eventf(s.vrg, corev1.EventTypeNormal, reasonVGRUpdated, "VolumeGroupReplication %s/%s set to %s", patched.Namespace, patched.Name, state)
	s.vgr, s.vgrUpdated = patched, true
	return nil
}

func (r *Reconciler) createVGR(ctx context.Context, s *scope, state replicationv1alpha1.ReplicationState) error {
	class, err := r.findClass(ctx, s)
	if err != nil {
		return err
	}
	vgr := newGlobalVGR(r.Options.OperatorNamespace, s.grID, class, state)
	err = r.Client.Create(ctx, vgr)
	switch {
	case err == nil:
		r.Recorder.Eventf(s.vrg, corev1.EventTypeNormal, reasonVGRCreated, "created VolumeGroupReplication %s/%s as %s", vgr.Namespace, vgr.Name, state)
		s.vgr = vgr
		s.vgrUpdated = true
		return nil
	case apierrors.IsAlreadyExists(err):
		// A peer VRG won the race; read its VGR past the cache and pick it up.
		log.FromContext(ctx).V(1).Info("global VGR created by a peer", "vgr", vgr.Name)
		existing := &replicationv1alpha1.VolumeGroupReplication{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(vgr), existing); err != nil {
			return flow.Waiting("VGRCreatedByPeer", vgrRetry, "VolumeGroupReplication %s exists but cannot be read yet: %w", vgr.Name, err)
		}
		s.vgr = existing
		return r.ensureVGR(ctx, s, state, false)
	default:
		return flow.Transient(srv1alpha1.ReasonCreateFailed, fmt.Errorf("creating VolumeGroupReplication %s: %w", vgr.Name, err))
	}
}

// newGlobalVGR is the shared VGR of a replication group: CG-only selector, no owner,
// external controller, no auto-resync.
func newGlobalVGR(namespace, grID, class string, state replicationv1alpha1.ReplicationState) *replicationv1alpha1.VolumeGroupReplication {
	return &replicationv1alpha1.VolumeGroupReplication{
		ObjectMeta: metav1.ObjectMeta{
			Name:      drv1alpha1.GlobalVGRName(grID),
			Namespace: namespace,
			Labels:    map[string]string{drv1alpha1.CreatedByRamenLabel: "true"},
		},
		Spec: replicationv1alpha1.VolumeGroupReplicationSpec{
			VolumeGroupReplicationClassName: class,
			ReplicationState:                state,
			AutoResync:                      false,
			External:                        true,
			Source: replicationv1alpha1.VolumeGroupReplicationSource{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{drv1alpha1.ConsistencyGroupLabel: grID}},
			},
		},
	}
}

// findClass returns the VolumeGroupReplicationClass of this cluster whose
// groupreplicationid label is the group's. Among several it prefers, in order, the
// global one, the one of the PVCs' storage ID, the one of the VRG's scheduling
// interval, and then the first by name.
func (r *Reconciler) findClass(ctx context.Context, s *scope) (string, error) {
	sel := labels.SelectorFromSet(labels.Set{drv1alpha1.GroupReplicationIDLabel: s.grID})
	if async := s.vrg.Spec.Async; async != nil && (len(async.ReplicationClassSelector.MatchLabels) > 0 || len(async.ReplicationClassSelector.MatchExpressions) > 0) {
		extra, err := metav1.LabelSelectorAsSelector(&async.ReplicationClassSelector)
		if err != nil {
			return "", flow.Stalled(drv1alpha1.ReasonError, "invalid spec.async.replicationClassSelector: %w", err)
		}
		reqs, _ := extra.Requirements()
		sel = sel.Add(reqs...)
	}
	list := &replicationv1alpha1.VolumeGroupReplicationClassList{}
	if err := r.Client.List(ctx, list, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return "", flow.Transient(srv1alpha1.ReasonReadFailed, fmt.Errorf("listing VolumeGroupReplicationClasses: %w", err))
	}
	if len(list.Items) == 0 {
		return "", flow.Waiting(reasonNoClass, classRetry, "no VolumeGroupReplicationClass with label %s=%s", drv1alpha1.GroupReplicationIDLabel, s.grID)
	}
	var storageIDs []string
	for _, p := range s.pvcs {
		storageIDs = append(storageIDs, p.storageID)
	}
	interval := ""
	if s.vrg.Spec.Async != nil {
		interval = s.vrg.Spec.Async.SchedulingInterval
	}
	score := func(c *replicationv1alpha1.VolumeGroupReplicationClass) int {
		n := 0
		if c.Labels[drv1alpha1.GlobalLabel] == "true" {
			n += 4
		}
		if slices.Contains(storageIDs, c.Labels[drv1alpha1.StorageIDLabel]) {
			n += 2
		}
		if interval != "" && c.Spec.Parameters[schedulingIntervalParameter] == interval {
			n++
		}
		return n
	}
	items := list.Items
	sort.SliceStable(items, func(i, j int) bool {
		if a, b := score(&items[i]), score(&items[j]); a != b {
			return a > b
		}
		return items[i].Name < items[j].Name
	})
	return items[0].Name, nil
}

// deleteVGR removes the shared VGR; already gone is fine.
func (r *Reconciler) deleteVGR(ctx context.Context, s *scope, name string) error {
	vgr := &replicationv1alpha1.VolumeGroupReplication{ObjectMeta: metav1.ObjectMeta{Namespace: r.Options.OperatorNamespace, Name: name}}
	if err := r.Client.Delete(ctx, vgr); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return flow.Transient(srv1alpha1.ReasonDeleteFailed, fmt.Errorf("deleting VolumeGroupReplication %s: %w", name, err))
	}
	r.Recorder.Eventf(s.vrg, corev1.EventTypeNormal, reasonVGRDeleted, "deleted VolumeGroupReplication %s/%s: every VRG of the group is being deleted", vgr.Namespace, name)
	return nil
}
