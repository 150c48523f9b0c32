package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
)

// Annotations of a claim the PV controller bound.
const (
	annBindCompleted     = "pv.kubernetes.io/bind-completed"
	annBoundByController = "pv.kubernetes.io/bound-by-controller"
)

// Driver is the CSI driver name of the volumes the binder creates.
const Driver = "sim.storage.siterecovery.test"

// Options configure the binder.
type Options struct {
	// KubeletDirs maps a node name to the kubelet folder the agent of that node
	// reads; block volumes get a device link there.
	KubeletDirs map[string]string
	// SkipRestores leaves claims with a dataSource to whoever restores them (the
	// snapshot simulator), so that their data is restored before they bind.
	SkipRestores bool
	// DeviceDir, when set, holds a sparse file per block volume, of the claim's
	// requested size (DeviceFile names it), and the kubelet links point at it:
	// the volume then has contents that the DRBD simulator and the guest read
	// and write. It must lie under /dev/ (a /dev/shm folder), as the agent
	// accepts only device paths there. Empty: links point at /dev/null.
	DeviceDir string
}

// DeviceFile is the file that holds the contents of block volume pv in dir.
func DeviceFile(dir, pv string) string { return filepath.Join(dir, pv) }

// SetupWithManager registers the binder with mgr.
func SetupWithManager(mgr ctrl.Manager, o Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("storage-simulator").
		WithOptions(controller.Options{SkipNameValidation: ptr.To(true), MaxConcurrentReconciles: 4}).
		For(&corev1.PersistentVolumeClaim{}).
		Complete(&binder{client: mgr.GetClient(), opts: o})
}

type binder struct {
	client client.Client
	opts   Options
}

func (b *binder) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	if err := b.client.Get(ctx, req.NamespacedName, pvc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if pvc.Status.Phase == corev1.ClaimBound || !pvc.DeletionTimestamp.IsZero() || (b.opts.SkipRestores && pvc.Spec.DataSource != nil) {
		return ctrl.Result{}, nil
	}
	pvName := pvc.Spec.VolumeName
	if pvName == "" {
		if ptr.Deref(pvc.Spec.StorageClassName, "") == "" {
			return ctrl.Result{}, nil // statically provisioned: someone else binds it
		}
		node, wait, err := b.waitsForConsumer(ctx, pvc)
		if err != nil || wait {
			return ctrl.Result{}, err
		}
		pvName = fmt.Sprintf("pvc-%s", pvc.UID)
		if err := b.createPV(ctx, pvc, pvName, node); err != nil {
			return ctrl.Result{}, err
		}
		before := pvc.DeepCopy()
		pvc.Spec.VolumeName = pvName
		metav1.SetMetaDataAnnotation(&pvc.ObjectMeta, annBoundByController, "yes")
		if err := b.client.Patch(ctx, pvc, client.MergeFrom(before)); err != nil {
			return ctrl.Result{}, err
		}
	}
	// The PV controller marks every claim it binds (k8s.io/kubernetes
	// pkg/controller/volume/persistentvolume/pv_controller.go,
	// bindClaimToVolume); kube-scheduler's volume binding counts a claim as
	// bound only with bind-completed (pkg/scheduler/framework/plugins/
	// volumebinding/binder.go, isPVCFullyBound) and otherwise looks for its
	// class to provision it.
	if pvc.Annotations[annBindCompleted] == "" {
		before := pvc.DeepCopy()
		metav1.SetMetaDataAnnotation(&pvc.ObjectMeta, annBindCompleted, "yes")
		if err := b.client.Patch(ctx, pvc, client.MergeFrom(before)); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := b.stage(pvName, pvc); err != nil {
		return ctrl.Result{}, err
	}
	before := pvc.DeepCopy()
	pvc.Status.Phase = corev1.ClaimBound
	pvc.Status.AccessModes = pvc.Spec.AccessModes
	pvc.Status.Capacity = pvc.Spec.Resources.Requests
	return ctrl.Result{}, b.client.Status().Patch(ctx, pvc, client.MergeFrom(before))
}

// annSelectedNode is where kube-scheduler records the node it chose for a
// pod whose claim waits for its first consumer (k8s.io/kubernetes
// pkg/controller/volume/persistentvolume/util, AnnSelectedNode).
const annSelectedNode = "volume.kubernetes.io/selected-node"

// waitsForConsumer reports whether pvc's class binds on first consumer and
// no consumer was placed yet; otherwise it returns the node the scheduler
// selected ("" for an immediately bound class). A provisioner creates such a
// volume only once the scheduler placed a pod using it, on that node's
// topology (external-provisioner's controller.go, in sig-storage-lib-external-
// provisioner: shouldProvision and the selected node passed to Provision), so a
// pod that bypasses the scheduler by naming its node leaves the claim Pending.
func (b *binder) waitsForConsumer(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (string, bool, error) {
	class := &storagev1.StorageClass{}
	if err := b.client.Get(ctx, client.ObjectKey{Name: ptr.Deref(pvc.Spec.StorageClassName, "")}, class); err != nil {
		// A class the cluster does not have: bound at once, as before classes
		// were objects here.
		return "", false, client.IgnoreNotFound(err)
	}
	if ptr.Deref(class.VolumeBindingMode, storagev1.VolumeBindingImmediate) != storagev1.VolumeBindingWaitForFirstConsumer {
		return "", false, nil
	}
	node := pvc.Annotations[annSelectedNode]
	return node, node == "", nil
}

// createPV creates the claim's volume; node, when set, is the only node it
// attaches to (the topology of a WaitForFirstConsumer volume).
func (b *binder) createPV(ctx context.Context, pvc *corev1.PersistentVolumeClaim, name, node string) error {
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      pvc.Spec.Resources.Requests,
			AccessModes:                   pvc.Spec.AccessModes,
			VolumeMode:                    pvc.Spec.VolumeMode,
			StorageClassName:              ptr.Deref(pvc.Spec.StorageClassName, ""),
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: Driver, VolumeHandle: name,
			}},
		},
	}
	if node != "" {
		pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}}
	}
	if err := b.client.Create(ctx, pv); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// stage publishes a block volume on every simulated node, as the kubelet would
// once a pod using it runs there.
func (b *binder) stage(pvName string, pvc *corev1.PersistentVolumeClaim) error {
	if pvc.Spec.VolumeMode == nil || *pvc.Spec.VolumeMode != corev1.PersistentVolumeBlock {
		return nil
	}
	target := "/dev/null"
	if b.opts.DeviceDir != "" {
		target = DeviceFile(b.opts.DeviceDir, pvName)
		if err := createSparse(target, pvc.Spec.Resources.Requests.Storage().Value()); err != nil {
			return err
		}
	}
	for _, dir := range b.opts.KubeletDirs {
		devDir := filepath.Join(dir, "plugins", "kubernetes.io", "csi", "volumeDevices", pvName, "dev")
		if err := os.MkdirAll(devDir, 0o755); err != nil {
			return err
		}
		link := filepath.Join(devDir, string(pvc.UID))
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		// The link only has to point into /dev like a real one.
		if err := os.Symlink(target, link); err != nil {
			return err
		}
	}
	return nil
}

// createSparse makes path a sparse file of size bytes, once: a volume keeps its
// contents when its claim is reconciled again.
func createSparse(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// TempDeviceDir makes a folder under /dev/shm for Options.DeviceDir, removed
// when t ends: the agent accepts device paths under /dev/ only, and tmpfs
// keeps the sparse volumes in memory.
func TempDeviceDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "siterecovery-volumes-")
	if err != nil {
		t.Fatalf("creating a volume folder under /dev/shm: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
