package admission

import (
	ctrl "sigs.k8s.io/controller-runtime"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// RBAC: the webhooks read what they check against, in the DR namespace.
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=failoverrequests;testfailovers;protectionrequests;protectiongroups;protectionzones,verbs=get;list;watch
// +kubebuilder:rbac:groups=dr.siterecovery.trilio.io,resources=drpolicies;drplacementcontrols,verbs=get;list;watch

// SetupWithManager registers the webhooks of one DR namespace with mgr's
// webhook server. ProtectionZones are validated by the cluster-wide zone
// webhook instead (SetupZoneWebhook), which exists before any DR namespace does.
func SetupWithManager(mgr ctrl.Manager, rm remote.ClusterCache) error {
	c := mgr.GetClient()
	if err := ctrl.NewWebhookManagedBy(mgr, &srv1alpha1.FailoverRequest{}).
		WithValidator(&failoverRequests{client: c, requests: mgr.GetAPIReader()}).Complete(); err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &srv1alpha1.TestFailover{}).
		WithValidator(&testFailovers{client: c}).Complete(); err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &srv1alpha1.ProtectionRequest{}).
		WithValidator(&protectionRequests{client: c, remote: rm}).Complete(); err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &srv1alpha1.ProtectionGroup{}).
		WithValidator(&protectionGroups{client: c, remote: rm}).Complete(); err != nil {
		return err
	}
	return ctrl.NewWebhookManagedBy(mgr, &drv1alpha1.DRPlacementControl{}).
		WithValidator(&placements{client: c}).Complete()
}
