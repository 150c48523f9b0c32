package vrg

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// The key's Secrets only, and only in the namespaces the chart lists: the
// DR namespaces (where the quorum tier puts the key; read only) and the
// application namespaces of VolSync groups (where the movers read the copy).
// No Secret of any other namespace is ever read or written.
// +kubebuilder:rbac:groups=core,resources=secrets,verbs=get,namespace=workload-dr-namespace
// +kubebuilder:rbac:groups=core,resources=secrets,verbs=get;create;delete,namespace=volsync-application-namespace

// ReasonKeyRefused is the reason of a VolSync VRG's DataReady and
// DataProtected conditions when the pre-shared key its labels point at is not
// its group's to take.
const ReasonKeyRefused = "PreSharedKeyRefused"

// requirePSK makes sure the movers' pre-shared-key Secret is in the VRG's
// namespace. The quorum tier mints the key once and copies it to the DR
// namespace of both clusters (a key each cluster minted for itself would never
// let the two movers connect); pg-controller copies it from there, so that the
// quorum identity never needs to create Secrets outside its DR namespace. The
// key is never logged nor put in a condition or event.
func (r *Reconciler) requirePSK(ctx context.Context, s *scope) error {
	name := drv1alpha1.VolSyncPSKSecretName(s.vrg.Name)
	// Past the cache: caching would watch every Secret of the cluster.
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: s.vrg.Namespace, Name: name}, &corev1.Secret{})
	switch {
	case err == nil:
		return nil
	case !apierrors.IsNotFound(err):
		return flow.Transient(srv1alpha1.ReasonReadFailed, fmt.Errorf("reading Secret %s: %w", name, err))
	}
	drNamespace := s.vrg.Labels[srv1alpha1.DRNamespaceLabel]
	waiting := func() error {
		s.progress = fmt.Sprintf("waiting for the pre-shared-key Secret %s, which the quorum tier copies to DR namespace %q on both clusters", name, drNamespace)
		return flow.Waiting(drv1alpha1.ReasonProgressing, pskRetry, "%s", s.progress)
	}
	if drNamespace == "" {
		return waiting()
	}
	src := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: drNamespace, Name: name}, src); err != nil {
		if apierrors.IsNotFound(err) {
			return waiting()
		}
		return flow.Transient(srv1alpha1.ReasonReadFailed, fmt.Errorf("reading Secret %s/%s: %w", drNamespace, name, err))
	}
	if err := r.keyOfGroup(ctx, s, drNamespace, src); err != nil {
		return err
	}
	copied := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.vrg.Namespace, Name: name, Labels: maps.Clone(src.Labels)},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{drv1alpha1.VolSyncPSKKey: src.Data[drv1alpha1.VolSyncPSKKey]},
	}
	if err := r.Client.Create(ctx, copied); err != nil && !apierrors.IsAlreadyExists(err) {
		return flow.Transient(srv1alpha1.ReasonWriteFailed, fmt.Errorf("copying the pre-shared-key Secret %s into namespace %s: %w", name, s.vrg.Namespace, err))
	}
	return nil
}

// keyOfGroup refuses to copy a DR namespace's key into the VRG's namespace
// unless the key is its group's. Whoever may create a VRG in a namespace sets
// its labels and name, so neither tells whose key it may have; what the
// quorum tier wrote does: the group's copy in the DR namespace (the quorum
// identity of that DR namespace alone writes there) must protect VMs of the
// VRG's namespace, and the key Secret must name that group
// (srv1alpha1.ProtectionGroupLabel, set by the quorum tier when it copies the
// key there). Otherwise the VRG says why and nothing is copied.
func (r *Reconciler) keyOfGroup(ctx context.Context, s *scope, drNamespace string, key *corev1.Secret) error {
	group := s.vrg.Spec.ProtectionGroupRef
	refuse := func(why string) error {
		s.refused = fmt.Sprintf("pre-shared-key Secret %s/%s is not copied into namespace %s: %s", drNamespace, key.Name, s.vrg.Namespace, why)
		return flow.Waiting(ReasonKeyRefused, pskRetry, "%s", s.refused)
	}
	if group == "" {
		return refuse("the VolumeReplicationGroup names no protectionGroupRef")
	}
	pg := &srv1alpha1.ProtectionGroup{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: drNamespace, Name: group}, pg); err != nil {
		if apierrors.IsNotFound(err) {
			return refuse(fmt.Sprintf("DR namespace %s has no ProtectionGroup %s", drNamespace, group))
		}
		return flow.Transient(srv1alpha1.ReasonReadFailed, fmt.Errorf("reading ProtectionGroup %s/%s: %w", drNamespace, group, err))
	}
	if len(pg.Spec.VirtualMachines) == 0 {
		return refuse(fmt.Sprintf("ProtectionGroup %s/%s protects no VM", drNamespace, group))
	}
	for _, vm := range pg.Spec.VirtualMachines {
		if vm.Namespace != s.vrg.Namespace {
			return refuse(fmt.Sprintf("ProtectionGroup %s/%s protects VirtualMachine %s/%s, outside namespace %s", drNamespace, group, vm.Namespace, vm.Name, s.vrg.Namespace))
		}
	}
	if owner := key.Labels[srv1alpha1.ProtectionGroupLabel]; owner != group {
		return refuse(fmt.Sprintf("the key belongs to group %q, not to %s", owner, group))
	}
	return nil
}

// deletePSK deletes the VRG's copy of the pre-shared key once the VRG goes.
func (r *Reconciler) deletePSK(ctx context.Context, s *scope) error {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.vrg.Namespace, Name: drv1alpha1.VolSyncPSKSecretName(s.vrg.Name)}}
	if err := client.IgnoreNotFound(r.Client.Delete(ctx, secret)); err != nil {
		return flow.Transient(srv1alpha1.ReasonWriteFailed, fmt.Errorf("deleting Secret %s: %w", secret.Name, err))
	}
	return nil
}
