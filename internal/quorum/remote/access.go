package remote

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The workload chart writes the quorumAccess choices quorum-manager must know
// before it acts into one ConfigMap in each DR namespace of a workload cluster
// (charts/workload-control-plane/templates/quorum-access-settings.yaml). It
// only informs: the cluster's quorum guard and webhooks decide. A cluster
// without it (an older chart, or no quorumAccess release) is "unknown", and
// callers go on as before it existed.
const (
	// AccessSettingsConfigMap is that ConfigMap's fixed name.
	AccessSettingsConfigMap = "siterecovery-quorum-access"
	// AllowHookSidecarsKey holds quorumAccess.testFailover.allowHookSidecars,
	// "true" or "false".
	AllowHookSidecarsKey = "testFailover.allowHookSidecars"
	// ApplicationNamespacesKey holds the DR namespace's entry of
	// quorumAccess.applicationNamespaces, comma-separated ("" lists none).
	ApplicationNamespacesKey = "applicationNamespaces"
	// ApplicationNamespacesValue is the chart value an operator adds a
	// namespace to.
	ApplicationNamespacesValue = "quorumAccess.applicationNamespaces"
	// ReasonNamespaceNotListed is the condition reason of a request held or
	// refused because a workload cluster does not list its VM's namespace.
	ReasonNamespaceNotListed = "NamespaceNotListedOnWorkloadCluster"
)

// AccessSettings is one workload cluster's AccessSettingsConfigMap of a DR
// namespace; the zero value is a cluster without it.
type AccessSettings struct {
	// Found: the ConfigMap exists.
	Found bool
	data  map[string]string
}

// ReadAccessSettings reads the AccessSettingsConfigMap of drNamespace
// through r (a Remote's Direct client: the remote caches do not hold
// ConfigMaps of the DR namespace).
func ReadAccessSettings(ctx context.Context, r client.Reader, drNamespace string) (AccessSettings, error) {
	cm := &corev1.ConfigMap{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: drNamespace, Name: AccessSettingsConfigMap}, cm); {
	case apierrors.IsNotFound(err):
		return AccessSettings{}, nil
	case err != nil:
		return AccessSettings{}, fmt.Errorf("reading ConfigMap %s/%s: %w", drNamespace, AccessSettingsConfigMap, err)
	}
	return AccessSettings{Found: true, data: cm.Data}, nil
}

// HookSidecarsAllowed reports quorumAccess.testFailover.allowHookSidecars; a
// cluster without the setting does not allow them.
func (a AccessSettings) HookSidecarsAllowed() bool { return a.data[AllowHookSidecarsKey] == "true" }

// ApplicationNamespaces returns the application namespaces the cluster lets
// the DR namespace act in; known is false when the cluster does not say (no
// ConfigMap, or a chart older than the key).
func (a AccessSettings) ApplicationNamespaces() (namespaces []string, known bool) {
	v, ok := a.data[ApplicationNamespacesKey]
	if !ok {
		return nil, false
	}
	for n := range strings.SplitSeq(v, ",") {
		if n = strings.TrimSpace(n); n != "" {
			namespaces = append(namespaces, n)
		}
	}
	return namespaces, true
}

// Lists reports whether the cluster lets the DR namespace act in namespace
// ns; known is false when it does not say.
func (a AccessSettings) Lists(ns string) (listed, known bool) {
	namespaces, known := a.ApplicationNamespaces()
	return slices.Contains(namespaces, ns), known
}

// NotListedMessage says that cluster's workload release does not list ns for
// drNamespace, what that refuses, and which value to change.
func NotListedMessage(cluster, drNamespace, ns string, a AccessSettings) string {
	listed, _ := a.ApplicationNamespaces()
	have := "none"
	if len(listed) > 0 {
		have = strings.Join(listed, ", ")
	}
	return fmt.Sprintf("workload cluster %s does not let DR namespace %s act in namespace %s: its quorum guard and webhooks would refuse "+
		"the VM's replication objects there (it lists: %s). Add %s to %s.%s of the workload-control-plane release on %s",
		cluster, drNamespace, ns, have, ns, ApplicationNamespacesValue, drNamespace, cluster)
}
