package admission

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Paths the webhooks are served on; the workload-control-plane chart's
// configuration names them.
const (
	StandbyVMPath = "/validate-standby-virtualmachines"
	StackPath     = "/validate-replication-stack"
)

// SetupWithManager registers the webhooks with mgr's webhook server.
func SetupWithManager(mgr ctrl.Manager, allowed Identities) {
	srv := mgr.GetWebhookServer()
	dec := admission.NewDecoder(mgr.GetScheme())
	srv.Register(StandbyVMPath, &webhook.Admission{Handler: &virtualMachines{
		groups: mgr.GetClient(), pvcs: mgr.GetAPIReader(), allowed: allowed, decoder: dec}})
	srv.Register(StackPath, &webhook.Admission{Handler: &stackObjects{allowed: allowed}})
}
