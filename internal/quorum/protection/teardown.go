package protection

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// teardownPoll is how often removal looks again at kinds the controller does
// not watch (pods and PVs), while it waits for them to go.
const teardownPoll = 2 * time.Second

// tier is one layer of a VM disk's DRBD storage stack. Layers go top-down and a
// layer is deleted only once the layers above it are gone on both clusters:
// DRBD must not be taken down under a frontend in use, nor a holder pod (which
// keeps the backing device attached) under DRBD.
type tier struct {
	kind string
	// role is the srv1alpha1.ObjectRoleLabel of the layer's objects; "" for DRBDResources.
	role       string
	newList    func() client.ObjectList
	namespaced bool
	// watched is true when a remote watch reports the layer's deletions.
	watched bool
}

var (
	frontendClaims = tier{kind: "PersistentVolumeClaim", role: srv1alpha1.ObjectRoleFrontend, namespaced: true, watched: true,
		newList: func() client.ObjectList { return &corev1.PersistentVolumeClaimList{} }}
	frontendVolumes = tier{kind: "PersistentVolume", role: srv1alpha1.ObjectRoleFrontend,
		newList: func() client.ObjectList { return &corev1.PersistentVolumeList{} }}
	drbdResources = tier{kind: "DRBDResource", namespaced: true, watched: true,
		newList: func() client.ObjectList { return &srv1alpha1.DRBDResourceList{} }}
	holderPods = tier{kind: "Pod", role: srv1alpha1.ObjectRoleHolder, namespaced: true,
		newList: func() client.ObjectList { return &corev1.PodList{} }}
	backingClaims = tier{kind: "PersistentVolumeClaim", role: srv1alpha1.ObjectRoleBacking, namespaced: true, watched: true,
		newList: func() client.ObjectList { return &corev1.PersistentVolumeClaimList{} }}
	metadataClaims = tier{kind: "PersistentVolumeClaim", role: srv1alpha1.ObjectRoleMetadata, namespaced: true, watched: true,
		newList: func() client.ObjectList { return &corev1.PersistentVolumeClaimList{} }}
)

// removeReplication deletes everything between the VM and its backing PVCs on
// both clusters: frontend PVCs and PVs, the DRBDResources (each drbd-node-agent
// runs `drbdadm down` before it lets its DRBDResource go) and the holder pods.
func (r *Reconciler) removeReplication(ctx context.Context, s *scope) error {
	return r.removeTiers(ctx, s, frontendClaims, frontendVolumes, drbdResources, holderPods)
}

// removeStack removes what is left once the VM is on plain PVCs: the metadata
// PVCs of both clusters, and the DR backing PVCs, unless the VM stays on the DR
// cluster: then they are its disks and only lose the request's labels; last
// the peer-auth Secrets of both clusters.
func (r *Reconciler) removeStack(ctx context.Context, s *scope) (ctrl.Result, error) {
	if err := r.removeReplication(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	setCondition(s.req, ConditionReplicaProvisioned, metav1.ConditionFalse, ReasonUnprotecting, "DRBD resources removed from %s and %s", s.primaryCluster, s.target)
	if err := r.releaseSources(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.removeTiers(ctx, s, metadataClaims); err != nil {
		return ctrl.Result{}, err
	}
	if s.stayOn == s.target {
		if err := r.releaseBacking(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
	} else if err := r.removeTiers(ctx, s, backingClaims); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.removePeerSecrets(ctx, s)
}

// removeTiers removes the tiers in order, and waits while any of their objects
// is left: a watched kind wakes the request when it goes, the others are polled.
func (r *Reconciler) removeTiers(ctx context.Context, s *scope, tiers ...tier) error {
	for _, t := range tiers {
		left, err := r.removeTier(ctx, s, t)
		if err != nil {
			return err
		}
		if len(left) > 0 {
			poll := time.Duration(0)
			if !t.watched {
				poll = teardownPoll
			}
			return flow.Waiting(ReasonRemovingReplication, poll, "removing %s", strings.Join(left, ", "))
		}
	}
	return nil
}

// removeTier deletes a tier's objects of this request on both clusters and
// describes those still there afterwards.
func (r *Reconciler) removeTier(ctx context.Context, s *scope, t tier) ([]string, error) {
	var left []string
	for _, sd := range s.sides() {
		items, err := r.listOwned(ctx, s, sd, t)
		if err != nil {
			return nil, err
		}
		deleted := false
		for _, obj := range items {
			if !obj.GetDeletionTimestamp().IsZero() {
				continue
			}
			uid := obj.GetUID()
			if err := sd.rc.Direct.Delete(ctx, obj, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
				return nil, remoteErr(sd.cluster, fmt.Sprintf("deleting %s %s", t.kind, describe(obj)), err)
			}
			deleted = true
		}
		if deleted { // most kinds go at once; only report what stays
			if items, err = r.listOwned(ctx, s, sd, t); err != nil {
				return nil, err
			}
		}
		for _, obj := range items {
			left = append(left, fmt.Sprintf("%s %s on %s%s", t.kind, describe(obj), sd.cluster, pendingNote(obj)))
		}
	}
	return left, nil
}

func (r *Reconciler) listOwned(ctx context.Context, s *scope, sd side, t tier) ([]client.Object, error) {
	list := t.newList()
	opts := []client.ListOption{client.MatchingLabels(ownLabels(s, t.role))}
	if t.namespaced {
		opts = append(opts, client.InNamespace(s.vmNamespace()))
	}
	if err := sd.rc.Direct.List(ctx, list, opts...); err != nil {
		return nil, remoteErr(sd.cluster, "listing "+t.kind+"s", err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	out := make([]client.Object, 0, len(items))
	for _, it := range items {
		out = append(out, it.(client.Object))
	}
	return out, nil
}

// pendingNote says what a deleted object still waits for.
func pendingNote(obj client.Object) string {
	if d, ok := obj.(*srv1alpha1.DRBDResource); ok {
		return fmt.Sprintf(" (waiting for the drbd-node-agent of node %s to take it down)", d.Spec.NodeName)
	}
	return " (terminating)"
}

// releaseBacking strips the request's labels from its DR backing PVCs, which
// then belong to the VM that stays on the DR cluster.
func (r *Reconciler) releaseBacking(ctx context.Context, s *scope) error {
	sd := s.sides()[1]
	items, err := r.listOwned(ctx, s, sd, backingClaims)
	if err != nil {
		return err
	}
	for _, obj := range items {
		pvc := obj.(*corev1.PersistentVolumeClaim)
		patched := pvc.DeepCopy()
		for k := range labels(s.req, backingClaims.role) {
			delete(patched.Labels, k)
		}
		if err := sd.rc.Direct.Patch(ctx, patched, client.MergeFrom(pvc), client.FieldOwner(FieldOwner)); err != nil && !apierrors.IsNotFound(err) {
			return remoteErr(sd.cluster, "releasing PersistentVolumeClaim "+describe(pvc), err)
		}
	}
	return nil
}

// ownLabels select the objects of this request, of one role when role is set.
func ownLabels(s *scope, role string) map[string]string {
	l := map[string]string{srv1alpha1.ProtectionRequestLabel: s.req.Name, srv1alpha1.DRNamespaceLabel: s.req.Namespace}
	if role != "" {
		l[srv1alpha1.ObjectRoleLabel] = role
	}
	return l
}
