package charts

import (
	"testing"

	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// checkPGControllerFreezeRights: pg-controller may freeze and thaw guests
// (KubeVirt's freeze and unfreeze subresources, for application-consistent
// VolSync cycles) in the application namespaces of
// volsync.applicationNamespaces only, and no other subresource of a VMI.
func checkPGControllerFreezeRights(t *testing.T, pg client.Client, listed, unlisted string) {
	t.Helper()
	allowed := func(ns, sub string) bool {
		t.Helper()
		r := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: ns, Verb: "update", Group: "subresources.kubevirt.io", Resource: "virtualmachineinstances", Subresource: sub}}}
		require.NoError(t, pg.Create(t.Context(), r))
		return r.Status.Allowed
	}
	require.True(t, allowed(listed, "freeze"), "freeze in %s", listed)
	require.True(t, allowed(listed, "unfreeze"), "unfreeze in %s", listed)
	require.False(t, allowed(unlisted, "freeze"), "freeze in %s", unlisted)
	require.False(t, allowed("", "freeze"), "freeze cluster-wide")
	for _, sub := range []string{"console", "vnc", "softreboot", "pause"} {
		require.False(t, allowed(listed, sub), "%s in %s", sub, listed)
	}
}
