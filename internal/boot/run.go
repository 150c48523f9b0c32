package boot

import (
	ctrl "sigs.k8s.io/controller-runtime"
)

// Register adds a binary's reconcilers, webhooks and runnables to a manager.
type Register func(mgr ctrl.Manager, o Options) error

// Run builds the manager, registers the binary's components and runs until
// SIGTERM or SIGINT. It returns the process exit code.
func Run(o Options, register Register) int {
	mgr, err := NewManager(o)
	log := ctrl.Log.WithName("setup")
	if err != nil {
		log.Error(err, "unable to start")
		return 1
	}
	o.Webhook = o.webhookOptions()
	if err := register(mgr, o); err != nil {
		log.Error(err, "unable to register controllers")
		return 1
	}
	log.Info("starting manager", "namespace", o.Namespace, "leaderElection", o.LeaderElect)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "manager stopped with an error")
		return 1
	}
	return 0
}
