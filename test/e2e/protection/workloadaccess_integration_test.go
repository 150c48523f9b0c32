package protection_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/protection"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
	"github.com/siterecovery/siterecovery/test/env"
)

// writeAccessSettings writes the DR namespace's quorum access settings on a
// workload cluster as the workload chart renders them
// (templates/quorum-access-settings.yaml), listing namespaces.
func writeAccessSettings(t *testing.T, c client.Client, namespaces string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: remote.AccessSettingsConfigMap}}
	data := map[string]string{remote.AllowHookSidecarsKey: "false", remote.ApplicationNamespacesKey: namespaces}
	err := c.Get(t.Context(), client.ObjectKeyFromObject(cm), cm)
	switch {
	case apierrors.IsNotFound(err):
		cm.Data = data
		require.NoError(t, c.Create(t.Context(), cm))
	case err == nil:
		cm.Data = data
		require.NoError(t, c.Update(t.Context(), cm))
	default:
		require.NoError(t, err)
	}
}

// protectVMOnceListed protects vm while the DR cluster's workload release
// does not list its namespace for the DR namespace (the primary's has no
// settings: an older chart, unknown, not checked): the request waits in
// Validating, names the cluster, the DR namespace, the namespace and the
// value to add it to, and has created nothing on either cluster; once the
// release lists the namespace it goes on to Protected by itself.
func protectVMOnceListed(t *testing.T, q, p, d client.Client, vm string) *srv1alpha1.ProtectionRequest {
	t.Helper()
	writeAccessSettings(t, d, "billing")
	askProtection(t, q, p, vm)
	name := "protect-" + vm
	env.Eventually(t, wait, name+" held for the DR cluster's list", phaseIs(t.Context(), q, name, srv1alpha1.ProtectionValidating, protection.ReasonNamespaceNotListed))
	ready := meta.FindStatusCondition(getRequest(t, q, name).Status.Conditions, srv1alpha1.ConditionReady)
	for _, want := range []string{"workload cluster " + env.DR + " ", "DR namespace " + env.Namespace, "namespace " + env.AppNS,
		"it lists: billing", "Add " + env.AppNS + " to quorumAccess.applicationNamespaces." + env.Namespace + " of the workload-control-plane release on " + env.DR} {
		require.True(t, strings.Contains(ready.Message, want), "%q lacks %q", ready.Message, want)
	}
	for cluster, c := range map[string]client.Client{env.Primary: p, env.DR: d} {
		pvcs := &corev1.PersistentVolumeClaimList{}
		require.NoError(t, c.List(t.Context(), pvcs, client.InNamespace(env.AppNS), client.HasLabels{srv1alpha1.ProtectionRequestLabel}))
		require.Empty(t, pvcs.Items, "%s: a held request created or labelled PVCs", cluster)
	}
	writeAccessSettings(t, d, "billing,"+env.AppNS)
	env.Eventually(t, wait, name+" Protected once listed", phaseIs(t.Context(), q, name, srv1alpha1.ProtectionProtected, protection.ReasonProtected))
	return getRequest(t, q, name)
}

// sourceLabelsRepaired strips the request labels from vm1's source PVC on the
// primary, as on a VM protected before the flow labelled source PVCs, and
// waits until the Protected request's periodic check (every couple of
// seconds here) puts them back.
func sourceLabelsRepaired(t *testing.T, p client.Client) {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{}
	key := client.ObjectKey{Namespace: env.AppNS, Name: "vm1-root"}
	require.NoError(t, p.Get(t.Context(), key, pvc))
	want := map[string]string{srv1alpha1.DRNamespaceLabel: env.Namespace, srv1alpha1.ProtectionRequestLabel: "protect-vm1"}
	for k, v := range want {
		require.Equal(t, v, pvc.Labels[k], "the flow labelled the source PVC")
		delete(pvc.Labels, k)
	}
	require.NoError(t, p.Update(t.Context(), pvc))
	env.Eventually(t, wait, "source PVC labels repaired", func() error {
		got := &corev1.PersistentVolumeClaim{}
		if err := p.Get(t.Context(), key, got); err != nil {
			return err
		}
		for k, v := range want {
			if got.Labels[k] != v {
				return fmt.Errorf("label %s=%q, want %q", k, got.Labels[k], v)
			}
		}
		return nil
	})
}
