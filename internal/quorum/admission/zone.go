package admission

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// AllowZoneDeletionAnnotation set to "true" on a ProtectionZone lets it be
// deleted while groups or unfinished requests still use it.
const AllowZoneDeletionAnnotation = "siterecovery.trilio.io/allow-zone-deletion"

// zones validates ProtectionZones: their kubeconfig Secrets, the backend's
// prerequisites, and deletion while in use.
type zones struct{ client client.Reader }

var _ admission.Validator[*srv1alpha1.ProtectionZone] = &zones{}

// ValidateCreate checks a new zone.
func (v *zones) ValidateCreate(ctx context.Context, z *srv1alpha1.ProtectionZone) (admission.Warnings, error) {
	return nil, v.check(ctx, z)
}

// ValidateUpdate checks a changed zone.
func (v *zones) ValidateUpdate(ctx context.Context, _, z *srv1alpha1.ProtectionZone) (admission.Warnings, error) {
	if !z.DeletionTimestamp.IsZero() {
		return nil, nil // finalizer removal during deletion
	}
	return nil, v.check(ctx, z)
}

// ValidateDelete refuses deleting a zone still in use unless asked explicitly.
func (v *zones) ValidateDelete(ctx context.Context, z *srv1alpha1.ProtectionZone) (admission.Warnings, error) {
	if z.Annotations[AllowZoneDeletionAnnotation] == "true" {
		return nil, nil
	}
	groups := &srv1alpha1.ProtectionGroupList{}
	if err := v.client.List(ctx, groups, client.InNamespace(z.Namespace)); err != nil {
		return nil, err
	}
	var users []string
	for i := range groups.Items {
		if g := &groups.Items[i]; g.Spec.ZoneRef != nil && g.Spec.ZoneRef.Name == z.Name {
			users = append(users, "ProtectionGroup "+g.Name)
		}
	}
	requests := &srv1alpha1.FailoverRequestList{}
	if err := v.client.List(ctx, requests, client.InNamespace(z.Namespace)); err != nil {
		return nil, err
	}
	for i := range requests.Items {
		if r := &requests.Items[i]; !finished(r.Status.Phase) {
			users = append(users, "FailoverRequest "+r.Name)
		}
	}
	if len(users) == 0 {
		return nil, nil
	}
	return nil, fmt.Errorf("ProtectionZone %s is still used by %s; unprotect and finish those first, or set the annotation %s: \"true\" to delete it anyway (its groups then lose replication control)",
		z.Name, strings.Join(users, ", "), AllowZoneDeletionAnnotation)
}

func (v *zones) check(ctx context.Context, z *srv1alpha1.ProtectionZone) error {
	servers := map[string]string{}
	for _, c := range z.Spec.Clusters {
		server, err := v.kubeconfigServer(ctx, z.Namespace, c)
		if err != nil {
			return err
		}
		if other, dup := servers[server]; dup {
			return fmt.Errorf("clusters %s and %s both point at API server %s; each cluster of a zone must be a different cluster", other, c.Name, server)
		}
		servers[server] = c.Name
	}
	return v.backendPrerequisites(ctx, z)
}

// kubeconfigServer reads a cluster's kubeconfig Secret, applies the rules
// quorum-manager applies at connect time, and returns the normalised API server
// address. Its errors never contain the kubeconfig.
func (v *zones) kubeconfigServer(ctx context.Context, namespace string, c srv1alpha1.ZoneCluster) (string, error) {
	ref := c.KubeconfigSecretRef
	key := ref.Key
	if key == "" {
		key = srv1alpha1.KubeconfigSecretKey
	}
	s := &corev1.Secret{}
	if err := v.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return "", fmt.Errorf("cluster %s: kubeconfig Secret %s does not exist in namespace %s; create it first (key %q)", c.Name, ref.Name, namespace, key)
		}
		return "", err
	}
	data, ok := s.Data[key]
	if !ok {
		return "", fmt.Errorf("cluster %s: Secret %s has no key %q; put the kubeconfig under that key or set kubeconfigSecretRef.key", c.Name, ref.Name, key)
	}
	if err := remote.CheckKubeconfig(data); err != nil {
		return "", fmt.Errorf("cluster %s: Secret %s: %w", c.Name, ref.Name, err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return "", fmt.Errorf("cluster %s: Secret %s: kubeconfig is incomplete", c.Name, ref.Name)
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return "", fmt.Errorf("cluster %s: Secret %s: server address does not parse", c.Name, ref.Name)
	}
	return strings.ToLower(u.Host) + strings.TrimSuffix(u.Path, "/"), nil
}

// backendPrerequisites checks that the backend has what it uses.
func (v *zones) backendPrerequisites(ctx context.Context, z *srv1alpha1.ProtectionZone) error {
	switch z.Spec.StorageBackend {
	case srv1alpha1.BackendDRBD:
		if len(z.Spec.StorageMappings) == 0 {
			return fmt.Errorf("storageBackend DRBD needs spec.storageMappings: for each StorageClass of the primary's VM disks, the DR StorageClass of its replica")
		}
	case srv1alpha1.BackendOffloaded, srv1alpha1.BackendVolSync:
		policies := &drv1alpha1.DRPolicyList{}
		if err := v.client.List(ctx, policies, client.InNamespace(z.Namespace)); err != nil {
			return err
		}
		if len(policies.Items) == 0 {
			return fmt.Errorf("storageBackend %s needs a DRPolicy in namespace %s naming the zone's two clusters (and, for VolSync, its VolumeSnapshotClass selector); create it first", z.Spec.StorageBackend, z.Namespace)
		}
	}
	return nil
}
