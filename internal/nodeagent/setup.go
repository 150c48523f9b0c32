package nodeagent

import (
	"context"
	"fmt"
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/drbd"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// Setup adds the agent (events2 watcher, reconciler, taint controller, readiness
// check) to mgr. The manager must not use leader election: one agent runs per node.
func Setup(mgr ctrl.Manager, cfg Config) error {
	if err := cfg.Complete(); err != nil {
		return err
	}
	if err := writeTopLevelConfig(cfg.ResourceDir); err != nil {
		return fmt.Errorf("preparing %s: %w", cfg.ResourceDir, err)
	}
	log := mgr.GetLogger().WithName("drbd-node-agent").WithValues("node", cfg.NodeName)
	w := NewWatcher(cfg.Exec, cfg.DrbdsetupPath, log.WithName("events2"))
	if err := mgr.Add(w); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("drbd-events2", w.ReadyCheck); err != nil {
		return err
	}
	if err := mgr.Add(&Heartbeat{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Node: cfg.NodeName, Interval: cfg.HeartbeatInterval, Clock: cfg.Clock, Log: log.WithName("heartbeat")}); err != nil {
		return err
	}
	taints := NewTaints(mgr.GetClient(), mgr.GetAPIReader(), cfg.NodeName, w, cfg.Clock, log.WithName("taint"))
	w.Subscribe(func(_ context.Context, _ string) { taints.Kick() })
	if err := mgr.Add(taints); err != nil {
		return err
	}
	devices := cfg.Devices
	if devices == nil {
		devices = &KubeletDevices{KubeletDir: cfg.KubeletDir}
	}
	adm := &drbd.Adm{Exec: cfg.Exec, DrbdadmPath: cfg.DrbdadmPath, DrbdsetupPath: cfg.DrbdsetupPath,
		ConfigFile: filepath.Join(cfg.ResourceDir, ConfigFileName)}
	if cfg.Metrics != nil {
		if err := RegisterFigures(cfg.Metrics, cfg.NodeName, adm, mgr.GetClient(), log.WithName("figures")); err != nil {
			return fmt.Errorf("registering the DRBD figures: %w", err)
		}
	}
	r := &Reconciler{
		Client:  mgr.GetClient(),
		Config:  cfg,
		Adm:     adm,
		Watcher: w,
		// Uncached: the agent does not cache every PVC of the cluster.
		PVCs:      mgr.GetAPIReader(),
		Devices:   devices,
		Coalescer: NewCoalescer(cfg.Clock, cfg.StatusInterval),
		Recorder:  mgr.GetEventRecorder("drbd-node-agent"),
		Clock:     cfg.Clock,
		// Uncached: the agent may only get Secrets, in the peer-auth namespaces.
		PeerSecrets: &PeerSecrets{Reader: mgr.GetAPIReader()},
	}
	return r.SetupWithManager(mgr)
}

// SetupWithManager registers the DRBDResource controller: DRBDResources of this
// node (spec changes and deletions; the agent's own status writes do not wake it),
// plus a channel of DRBD state changes from the Watcher.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.wake = make(chan event.GenericEvent, 1024)
	r.memos = map[types.NamespacedName]*memo{}
	r.Watcher.Subscribe(r.wakeFor)
	node := r.Config.NodeName
	onNode := predicate.NewPredicateFuncs(func(o client.Object) bool {
		d, ok := o.(*srv1alpha1.DRBDResource)
		return ok && d.Spec.NodeName == node
	})
	deleting := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
	}}
	return ctrl.NewControllerManagedBy(mgr).
		Named("drbdresource").
		For(&srv1alpha1.DRBDResource{}, builder.WithPredicates(onNode, predicate.Or(predicate.GenerationChangedPredicate{}, deleting))).
		WatchesRawSource(source.Channel(r.wake, &handler.EnqueueRequestForObject{})).
		WithOptions(controllerOptions(r.Config)).
		Complete(r)
}

// controllerOptions retries a failed reconcile with flow's capped backoff, the
// one the quorum controllers use: a replica whose reconciles failed while its
// Pod was not there yet (pg-controller, which runs the kubelet side, down) would
// otherwise wait out controller-runtime's default backoff, which doubles to
// 1000 s, long after the cause is gone.
func controllerOptions(cfg Config) controller.Options {
	return controller.Options{MaxConcurrentReconciles: cfg.MaxConcurrentReconciles, RateLimiter: flow.RetryLimiter()}
}
