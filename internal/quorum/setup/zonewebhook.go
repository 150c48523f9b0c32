package setup

import (
	"errors"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/siterecovery/siterecovery/internal/boot"
	"github.com/siterecovery/siterecovery/internal/quorum/admission"
)

// RunZoneWebhook runs quorum-manager's zone-webhook mode until SIGTERM or
// SIGINT and returns its exit code.
func RunZoneWebhook(o Options) int { return boot.Run(o, ZoneWebhook()) }

// ZoneWebhook returns the Register function of quorum-manager's zone-webhook
// mode, which the protectionzone chart runs once per quorum cluster: it serves
// the ProtectionZone admission webhook for every namespace and runs no
// controller. o.Namespace is its own namespace, where its certificate Secret
// lives and to which its cache is limited. Every replica serves, so it takes
// no leader election.
func ZoneWebhook() boot.Register {
	return func(mgr ctrl.Manager, o boot.Options) error {
		if o.Webhook.Port == 0 {
			return errors.New("--zone-webhook needs --webhook-port: that mode only serves the ProtectionZone webhook")
		}
		if o.LeaderElect {
			return errors.New("--zone-webhook runs without --leader-elect: every replica serves the webhook")
		}
		return boot.ServeWebhooks(mgr, o.Webhook, admission.SetupZoneWebhook)
	}
}
