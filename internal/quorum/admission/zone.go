package admission

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/kubeconfig"
)

// AllowZoneDeletionAnnotation set to "true" on a ProtectionZone lets it be
// deleted while groups or unfinished requests still use it.
const AllowZoneDeletionAnnotation = "siterecovery.trilio.io/allow-zone-deletion"

// zones validates ProtectionZones: their kubeconfig Secrets, the backend's
// prerequisites, and deletion while in use. Its reader is uncached: it runs in
// the cluster-wide zone webhook, which may read only the DR namespaces that
// grant it access.
type zones struct{ client client.Reader }

var _ admission.Validator[*srv1alpha1.ProtectionZone] = &zones{}

// ValidateCreate checks a new zone.
func (v *zones) ValidateCreate(ctx context.Context, z *srv1alpha1.ProtectionZone) (admission.Warnings, error) {
	return nil, v.check(ctx, z)
}

// ValidateUpdate checks a changed zone.
// Metadata changes (finalizers, labels, the deletion annotation) are not
// checked again: quorum-manager applies the kubeconfig rules at connect time
// too, and a Secret broken since must not stop a zone from being deleted.
func (v *zones) ValidateUpdate(ctx context.Context, old, z *srv1alpha1.ProtectionZone) (admission.Warnings, error) {
	if !z.DeletionTimestamp.IsZero() || equality.Semantic.DeepEqual(old.Spec, z.Spec) {
		return nil, nil
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
		return nil, readError(z.Namespace, "ProtectionGroups", err)
	}
	var users []string
	for i := range groups.Items {
		if g := &groups.Items[i]; g.Spec.ZoneRef != nil && g.Spec.ZoneRef.Name == z.Name {
			users = append(users, "ProtectionGroup "+g.Name)
		}
	}
	requests := &srv1alpha1.FailoverRequestList{}
	if err := v.client.List(ctx, requests, client.InNamespace(z.Namespace)); err != nil {
		return nil, readError(z.Namespace, "FailoverRequests", err)
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
		return "", fmt.Errorf("cluster %s: %w", c.Name, readError(namespace, "Secret "+ref.Name, err))
	}
	data, ok := s.Data[key]
	if !ok {
		return "", fmt.Errorf("cluster %s: Secret %s has no key %q; put the kubeconfig under that key or set kubeconfigSecretRef.key", c.Name, ref.Name, key)
	}
	if err := kubeconfig.Check(data); err != nil {
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
			return readError(z.Namespace, "DRPolicies", err)
		}
		p := policyOf(policies.Items, clustersOf(z))
		if p == nil {
			return fmt.Errorf("storageBackend %s needs a DRPolicy in namespace %s whose drClusters are the zone's clusters %s; create it first",
				z.Spec.StorageBackend, z.Namespace, strings.Join(clustersOf(z), " and "))
		}
		if z.Spec.StorageBackend == srv1alpha1.BackendVolSync && isEmptySelector(p.Spec.VolumeSnapshotClassSelector) {
			return fmt.Errorf("storageBackend VolSync snapshots each consistency group: DRPolicy %s needs spec.volumeSnapshotClassSelector matching the VolumeSnapshotClass of the zone's CephFS StorageClasses on both clusters", p.Name)
		}
		if z.Spec.StorageBackend == srv1alpha1.BackendVolSync {
			// pg-controller runs VolSync's cycles on a cron schedule; refused
			// here, an interval cron cannot honour never reaches a VRG.
			if _, err := drv1alpha1.VolSyncSchedule(p.Spec.SchedulingInterval); err != nil {
				return fmt.Errorf("storageBackend VolSync: DRPolicy %s spec.%w", p.Name, err)
			}
		}
	}
	return nil
}

// policyOf returns the policy that pairs exactly the zone's clusters.
func policyOf(policies []drv1alpha1.DRPolicy, clusters []string) *drv1alpha1.DRPolicy {
	for i := range policies {
		p := &policies[i]
		if len(clusters) == len(p.Spec.DRClusters) && contains(clusters, p.Spec.DRClusters[0]) && contains(clusters, p.Spec.DRClusters[1]) {
			return p
		}
	}
	return nil
}

func isEmptySelector(s metav1.LabelSelector) bool {
	return len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0
}

// readError says what to do when the zone webhook may not read the zone's
// namespace: it reads only DR namespaces whose quorum-control-plane release
// grants it access there.
func readError(namespace, what string, err error) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("the ProtectionZone webhook may not read %s in namespace %s: it reads only DR namespaces whose quorum-control-plane release grants it access; install that chart in %s first (value zoneWebhook.enabled: true), then create the zone", what, namespace, namespace)
	}
	return fmt.Errorf("reading %s in namespace %s: %w", what, namespace, err)
}
