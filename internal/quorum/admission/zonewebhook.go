package admission

import (
	ctrl "sigs.k8s.io/controller-runtime"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// SetupZoneWebhook registers the cluster-wide ProtectionZone webhook, the one
// the protectionzone chart runs. It reads with the API reader, uncached and
// one object or namespace at a time, so that it needs no right to list or
// watch anything cluster-wide: each DR namespace's quorum-control-plane release
// grants it reads in that namespace only (its kubeconfig Secrets, groups,
// requests and policies), and a zone anywhere else is refused with what to
// install first.
func SetupZoneWebhook(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &srv1alpha1.ProtectionZone{}).
		WithValidator(&zones{client: mgr.GetAPIReader()}).Complete()
}
