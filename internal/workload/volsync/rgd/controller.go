package rgd

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	volsyncv1alpha1 "github.com/backube/volsync/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/workload/volsync"
)

// ControllerName names the controller and its logger.
const ControllerName = "replicationgroupdestination"

// Finalizer holds a ReplicationGroupDestination until its destinations are gone.
const Finalizer = "dr.siterecovery.trilio.io/replication-group-destination"

// recheck is how often a destination waiting on an unwatched object looks again.
const recheck = 10 * time.Second

// RBAC on the workload cluster: the controller keeps one ReplicationDestination
// and one receiving PVC per protected PVC, and reads the StorageClass that
// names the External mover.
// +kubebuilder:rbac:groups=dr.siterecovery.trilio.io,resources=replicationgroupdestinations,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=dr.siterecovery.trilio.io,resources=replicationgroupdestinations/status,verbs=get;update;patch
// The ReplicationDestinations it creates name it as their controller (blockOwnerDeletion).
// +kubebuilder:rbac:groups=dr.siterecovery.trilio.io,resources=replicationgroupdestinations/finalizers,verbs=update
// +kubebuilder:rbac:groups=volsync.backube,resources=replicationdestinations,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=core,resources=persistentvolumeclaims,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=snapshot.storage.k8s.io,resources=volumesnapshots,verbs=get;list;watch;patch;delete
// With Options.ServiceExport it exports each destination's Service.
// +kubebuilder:rbac:groups=multicluster.x-k8s.io,resources=serviceexports,verbs=get;create

// Reconciler reconciles the ReplicationGroupDestinations of one workload cluster.
type Reconciler struct {
	Client client.Client
	// APIReader reads past the cache where a stale read would leak an image:
	// the finalizer's list of destinations and of the images kept. Nil reads
	// through Client.
	APIReader client.Reader
	Clock     clock.PassiveClock
	// ServiceExport exports each destination's Service (MCS API) and records
	// its clusterset name as the destination's address.
	ServiceExport bool
}

// Options configure the controller.
type Options struct {
	// ServiceExport: see Reconciler.ServiceExport.
	ServiceExport bool
}

// SetupWithManager registers the controller.
func SetupWithManager(mgr ctrl.Manager, o Options) error {
	r := &Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Clock: clock.RealClock{}, ServiceExport: o.ServiceExport}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&drv1alpha1.ReplicationGroupDestination{}).
		Owns(&volsyncv1alpha1.ReplicationDestination{}).
		Complete(r)
}

// Reconcile keeps the destinations and records the group's latest images.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rgd := &drv1alpha1.ReplicationGroupDestination{}
	if err := r.Client.Get(ctx, req.NamespacedName, rgd); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !rgd.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, rgd)
	}
	if !controllerutil.ContainsFinalizer(rgd, Finalizer) {
		before := rgd.DeepCopy()
		controllerutil.AddFinalizer(rgd, Finalizer)
		if err := r.Client.Patch(ctx, rgd, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}
	before := rgd.DeepCopy()
	rds, err := r.ensureDestinations(ctx, rgd)
	if err == nil {
		err = r.deleteStale(ctx, rgd)
	}
	var unpublished []string
	if err == nil {
		unpublished, err = r.recordDestinations(ctx, rgd, rds)
	}
	if err == nil {
		recordImages(rgd, rds)
		err = r.retainImages(ctx, rgd, rds)
	}
	setReady(rgd, rds, unpublished, err)
	if !equality.Semantic.DeepEqual(before.Status, rgd.Status) {
		if _, werr := flow.NewStatusWriter(r.Client, nil).Write(ctx, rgd, flow.Change{Changed: true}); werr != nil {
			return ctrl.Result{}, werr
		}
	}
	return flow.Result(ctrl.Result{}, err)
}

// ensureDestinations creates the receiving PVC and the ReplicationDestination
// of every protected PVC.
func (r *Reconciler) ensureDestinations(ctx context.Context, rgd *drv1alpha1.ReplicationGroupDestination) ([]*volsyncv1alpha1.ReplicationDestination, error) {
	diff := drv1alpha1.IsDiffSyncEnabled(rgd.Annotations)
	out := make([]*volsyncv1alpha1.ReplicationDestination, 0, len(rgd.Spec.RDSpecs))
	refs := make([]*corev1.ObjectReference, 0, len(rgd.Spec.RDSpecs))
	for _, spec := range rgd.Spec.RDSpecs {
		p := spec.ProtectedPVC
		if err := r.ensurePVC(ctx, rgd, p); err != nil {
			if flow.As(err) != nil {
				return nil, err
			}
			return nil, flow.Transient(srv1alpha1.ReasonCreateFailed, fmt.Errorf("PVC %s: %w", p.Name, err))
		}
		provider := ""
		if diff {
			sc := &storagev1.StorageClass{}
			if err := r.Client.Get(ctx, client.ObjectKey{Name: ptr.Deref(p.StorageClassName, "")}, sc); err != nil {
				if apierrors.IsNotFound(err) {
					return nil, flow.Waiting(srv1alpha1.ReasonStorageClassNotFound, recheck, "PVC %s: StorageClass %q not found", p.Name, ptr.Deref(p.StorageClassName, ""))
				}
				return nil, flow.Transient(srv1alpha1.ReasonReadFailed, err)
			}
			provider = sc.Provisioner
		}
		rd := &volsyncv1alpha1.ReplicationDestination{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: rgd.Namespace}}
		if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, rd, func() error {
			mutateDestination(rgd, rd, p, provider)
			return controllerutil.SetControllerReference(rgd, rd, r.Client.Scheme())
		}); err != nil {
			return nil, flow.Transient(srv1alpha1.ReasonCreateFailed, fmt.Errorf("ReplicationDestination %s: %w", p.Name, err))
		}
		out = append(out, rd)
		refs = append(refs, &corev1.ObjectReference{APIVersion: volsyncv1alpha1.GroupVersion.String(), Kind: "ReplicationDestination", Namespace: rd.Namespace, Name: rd.Name})
	}
	rgd.Status.ReplicationDestinations = refs
	return out, nil
}

func mutateDestination(rgd *drv1alpha1.ReplicationGroupDestination, rd *volsyncv1alpha1.ReplicationDestination, p drv1alpha1.VolSyncProtectedPVC, provider string) {
	if rd.Labels == nil {
		rd.Labels = map[string]string{}
	}
	rd.Labels[volsync.RGDLabel] = rgd.Name
	secret := volsync.KeySecretName(rgd)
	if provider != "" {
		rd.Spec.RsyncTLS = nil
		rd.Spec.External = &volsyncv1alpha1.ReplicationDestinationExternalSpec{Provider: provider, Parameters: map[string]string{
			"copyMethod": string(volsyncv1alpha1.CopyMethodSnapshot), "destinationPVC": p.Name, "keySecret": secret,
		}}
		return
	}
	rd.Spec.External = nil
	capacity := p.Resources.Requests[corev1.ResourceStorage]
	rd.Spec.RsyncTLS = &volsyncv1alpha1.ReplicationDestinationRsyncTLSSpec{
		ReplicationDestinationVolumeOptions: volsyncv1alpha1.ReplicationDestinationVolumeOptions{
			CopyMethod: volsyncv1alpha1.CopyMethodSnapshot, Capacity: &capacity, StorageClassName: p.StorageClassName,
			AccessModes: p.AccessModes, DestinationPVC: ptr.To(p.Name),
		},
		KeySecret: ptr.To(secret),
		// Where VolSync reads the mode of a PVC it provisions; ours is made
		// by ensurePVC, alike.
		VolumeMode: p.VolumeMode,
	}
}

// ensurePVC creates the PVC a destination receives into; it becomes the
// application's PVC after a failover, so it is never deleted here.
func (r *Reconciler) ensurePVC(ctx context.Context, rgd *drv1alpha1.ReplicationGroupDestination, p drv1alpha1.VolSyncProtectedPVC) error {
	// The cache first: the PVC exists on every reconcile but the first, and
	// a create refused as already there is a write to the API server all the
	// same.
	existing := &corev1.PersistentVolumeClaim{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: rgd.Namespace, Name: p.Name}, existing)
	if err == nil {
		// volumeMode is immutable: a PVC of the other mode can never receive.
		if have, want := modeOf(existing.Spec.VolumeMode), modeOf(p.VolumeMode); have != want {
			return flow.Stalled("VolumeModeMismatch", "receiving PVC %s is %s but the protected PVC is %s; volumeMode cannot change, delete the receiving PVC", p.Name, have, want)
		}
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return err
	}
	modes := p.AccessModes
	if len(modes) == 0 {
		modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: rgd.Namespace, Labels: receivingLabels(rgd, p)},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: p.StorageClassName, AccessModes: modes, Resources: p.Resources,
			VolumeMode: p.VolumeMode},
	}
	if err := r.Client.Create(ctx, pvc); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// modeOf is a PVC's volumeMode, Filesystem when unset (the API's default).
func modeOf(m *corev1.PersistentVolumeMode) corev1.PersistentVolumeMode {
	return ptr.Deref(m, corev1.PersistentVolumeFilesystem)
}

// receivingLabels are the protected PVC's labels, so that the VRG's
// pvcSelector selects the receiving PVC once it becomes primary, and this
// destination's mark.
func receivingLabels(rgd *drv1alpha1.ReplicationGroupDestination, p drv1alpha1.VolSyncProtectedPVC) map[string]string {
	l := map[string]string{}
	for k, v := range p.Labels {
		l[k] = v
	}
	l[volsync.RGDLabel] = rgd.Name
	return l
}

// deleteStale deletes the destinations of PVCs that left the group.
func (r *Reconciler) deleteStale(ctx context.Context, rgd *drv1alpha1.ReplicationGroupDestination) error {
	want := map[string]bool{}
	for _, s := range rgd.Spec.RDSpecs {
		want[s.ProtectedPVC.Name] = true
	}
	list := &volsyncv1alpha1.ReplicationDestinationList{}
	if err := r.Client.List(ctx, list, client.InNamespace(rgd.Namespace), client.MatchingLabels{volsync.RGDLabel: rgd.Name}); err != nil {
		return flow.Transient(srv1alpha1.ReasonReadFailed, err)
	}
	for i := range list.Items {
		if want[list.Items[i].Name] {
			continue
		}
		if err := r.Client.Delete(ctx, &list.Items[i]); client.IgnoreNotFound(err) != nil {
			return flow.Transient(srv1alpha1.ReasonDeleteFailed, err)
		}
	}
	return nil
}

// recordImages records the destinations' latest images once every one has an
// image newer than the recorded one: a cycle whose sync reached only some PVCs
// is not the group's point in time yet.
func recordImages(rgd *drv1alpha1.ReplicationGroupDestination, rds []*volsyncv1alpha1.ReplicationDestination) {
	recorded := map[string]string{}
	for _, li := range rgd.Status.LatestImages {
		recorded[li.PVCName] = li.Snapshot.Name
	}
	images := make([]drv1alpha1.LatestImage, 0, len(rds))
	var oldest, oldestStart *metav1.Time
	for _, rd := range rds {
		st := rd.Status
		if st == nil || st.LatestImage == nil || st.LatestImage.Name == recorded[rd.Name] {
			return
		}
		images = append(images, drv1alpha1.LatestImage{PVCName: rd.Name, Snapshot: *st.LatestImage})
		if st.LastSyncTime != nil && (oldest == nil || st.LastSyncTime.Before(oldest)) {
			oldest = st.LastSyncTime
		}
		if st.LastSyncStartTime != nil && (oldestStart == nil || st.LastSyncStartTime.Before(oldestStart)) {
			oldestStart = st.LastSyncStartTime
		}
	}
	if len(images) == 0 {
		return
	}
	sort.Slice(images, func(i, j int) bool { return images[i].PVCName < images[j].PVCName })
	rgd.Status.LatestImages = images
	rgd.Status.LastSyncTime = oldest
	rgd.Status.LastSyncStartTime = oldestStart
	if oldest != nil && oldestStart != nil {
		rgd.Status.LastSyncDuration = &metav1.Duration{Duration: oldest.Sub(oldestStart.Time)}
	}
}

func setReady(rgd *drv1alpha1.ReplicationGroupDestination, rds []*volsyncv1alpha1.ReplicationDestination, unpublished []string, err error) {
	c := metav1.Condition{Status: metav1.ConditionTrue, Reason: drv1alpha1.ReasonReplicated}
	var waiting []string
	for _, rd := range rds {
		if rd.Status == nil || rd.Status.LatestImage == nil {
			waiting = append(waiting, rd.Name)
		}
	}
	switch {
	case err != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, flow.ReasonOf(err, "Error"), flow.Truncate(err.Error(), 1024)
	case len(unpublished) > 0:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonWaitingForAddress, unpublishedMessage(unpublished)
	case len(waiting) > 0:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, "WaitingForFirstSync", "no image received yet for "+strings.Join(waiting, ", ")
	default:
		c.Message = fmt.Sprintf("latest images of %d PVCs recorded", len(rgd.Status.LatestImages))
	}
	// Waiting for an address or a first image is Reconciling; an error that
	// only a spec change fixes is Stalled.
	rgd.Status.ObservedGeneration = rgd.Generation
	e := flow.As(err)
	flow.SetReady(&rgd.Status.Conditions, rgd.Generation, c.Status, c.Reason, c.Message, e != nil && e.Terminal())
}

// finalize deletes the destinations and the images they received; the
// received PVCs stay. The group goes when its VRG turns primary (after the
// rollback read the images) or goes itself, and then no image is needed: left
// behind, each would hold a full copy of a PVC on the former secondary.
func (r *Reconciler) finalize(ctx context.Context, rgd *drv1alpha1.ReplicationGroupDestination) error {
	if !controllerutil.ContainsFinalizer(rgd, Finalizer) {
		return nil
	}
	// The cache may not show a destination's newest image yet, nor the mark
	// of an image kept a moment ago; either would be left behind for good.
	list := &volsyncv1alpha1.ReplicationDestinationList{}
	if err := r.uncached().List(ctx, list, client.InNamespace(rgd.Namespace), client.MatchingLabels{volsync.RGDLabel: rgd.Name}); err != nil {
		return err
	}
	if err := r.deleteImages(ctx, rgd, list.Items); err != nil {
		return err
	}
	for i := range list.Items {
		if err := r.Client.Delete(ctx, &list.Items[i]); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	before := rgd.DeepCopy()
	controllerutil.RemoveFinalizer(rgd, Finalizer)
	return client.IgnoreNotFound(r.Client.Patch(ctx, rgd, client.MergeFrom(before)))
}

// uncached is the reader that bypasses the cache, Client when there is none.
func (r *Reconciler) uncached() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}
