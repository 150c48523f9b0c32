package protectiongroup

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "protectiongroup"

// RBAC on the workload cluster: the controller reads local groups and
// their VMs, changes the VMs' run state, and writes group status and events.
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectiongroups,verbs=get;list;watch
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectiongroups/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=kubevirt.io,resources=virtualmachines,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=kubevirt.io,resources=virtualmachineinstances,verbs=get;list;watch
// +kubebuilder:rbac:groups=core,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// It sets the role of the groups' DRBDResources from spec.drbd, and reports
// their state and their nodes' lost-quorum taint (which only the agents write).
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=drbdresources,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=core,resources=nodes,verbs=get;list;watch
// It runs the boot plans' pre/post-start steps and gate probes as Jobs in the
// VMs' namespaces, and deletes them when the group stops.
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete

// Reconciler runs or stops the VMs of local ProtectionGroups.
type Reconciler struct {
	Client client.Client
	// APIReader reads past the cache where a decision must rest on what
	// exists now (a demotion's VMIs); nil reads the cache only.
	APIReader client.Reader
	Recorder  record.EventRecorder
	Clock     clock.PassiveClock
	// ProbeImage runs the boot gates' TCP and HTTP probes; DefaultProbeImage
	// when empty.
	ProbeImage string

	// status writes the groups' status; its throttle spaces out the writes
	// that only report progress (progressOnly). Made on first use.
	status     *flow.StatusWriter
	statusOnce sync.Once

	// patched is the VMs' run fields as this controller's patches left them:
	// a cached VM older than that has not caught up with the patch, which its
	// watch event will wake the group for, and is not patched again.
	patched patchedVMs
}

// Options are the controller's settings.
type Options struct {
	// ProbeImage runs the boot gates' probes; DefaultProbeImage if empty.
	ProbeImage string
}

// SetupWithManager registers the controller with its default options.
func SetupWithManager(mgr ctrl.Manager) error { return SetupWithOptions(mgr, Options{}) }

// SetupWithOptions registers the controller and the indexes its mappers need.
func SetupWithOptions(mgr ctrl.Manager, o Options) error {
	r := &Reconciler{
		Client:     mgr.GetClient(),
		APIReader:  mgr.GetAPIReader(),
		Recorder:   mgr.GetEventRecorderFor(ControllerName),
		Clock:      clock.RealClock{},
		ProbeImage: o.ProbeImage,
	}
	if err := indexVMs(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	if err := indexReplicaNodes(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	if err := indexNames(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		// A spec change at once; every other change, its own status writes
		// included, after replicaEventDelay: a reconcile that decided on a stale
		// cached copy runs again once the cache has caught up, while a burst of
		// status writes does not wake the group once per write.
		For(&srv1alpha1.ProtectionGroup{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&srv1alpha1.ProtectionGroup{}, flow.DelayedHandler(&handler.EnqueueRequestForObject{}, replicaEventDelay), builder.WithPredicates(sameGeneration)).
		Watches(&kubevirtv1.VirtualMachine{}, handler.EnqueueRequestsFromMapFunc(r.groupsOf)).
		Watches(&kubevirtv1.VirtualMachineInstance{}, handler.EnqueueRequestsFromMapFunc(r.groupsOf)).
		Watches(&srv1alpha1.DRBDResource{}, flow.DelayedHandler(handler.EnqueueRequestsFromMapFunc(r.groupsOfReplica), replicaEventDelay), builder.WithPredicates(predicate.Not(promoted))).
		// A promotion at once: the group's VMs may wait for it to start.
		Watches(&srv1alpha1.DRBDResource{}, handler.EnqueueRequestsFromMapFunc(r.groupsOfReplica), builder.WithPredicates(promoted)).
		Watches(&corev1.Node{}, flow.DelayedHandler(handler.EnqueueRequestsFromMapFunc(r.groupsOnNode), replicaEventDelay), builder.WithPredicates(taintsChanged)).
		Watches(&batchv1.Job{}, handler.EnqueueRequestsFromMapFunc(groupOfJob)).
		Complete(r)
}

// Reconcile drives one group's VMs towards spec.desiredState and its DRBD
// replicas towards spec.drbd, and reports status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	group := &srv1alpha1.ProtectionGroup{}
	if err := r.Client.Get(ctx, req.NamespacedName, group); err != nil {
		if apierrors.IsNotFound(err) {
			r.statusWriter().Forget(req.String())
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s := &scope{group: group, before: group.DeepCopy(), now: r.Clock.Now()}

	// Pre-stop and post-start hooks go here, around applyDesiredState, so that
	// every failover path gets them without changes elsewhere.
	res, err := flow.RunPhases(ctx, s, r.loadVMs, r.loadDRBD, r.applyDRBDIntent, r.applyDesiredState)
	if s.loaded {
		setStatus(s)
		held, perr := r.writeStatus(ctx, s)
		if perr != nil {
			err = errors.Join(err, perr)
		}
		res = flow.Soonest(res, flow.After(held))
	}
	return flow.Result(res, err)
}

// readOnly skips the deep copy of a cache read. A group reconciles on every
// event of its VMs, instances and replicas, and reads all of them each time:
// copying them was most of a reconcile's work in a large group. What it
// returns shares its lists, maps and pointers with the cache: this
// controller only reads it, and patches a copy of its own (applyDesiredState)
// or an object built for the patch (ApplyDRBDIntent).
var readOnly = client.UnsafeDisableDeepCopy

// loadVMs reads every VM of the group and whether its VMI exists, from the
// cache, read-only (readOnly).
func (r *Reconciler) loadVMs(ctx context.Context, s *scope) (ctrl.Result, error) {
	s.vms = make([]vmState, 0, len(s.group.Spec.VirtualMachines))
	for _, ref := range s.group.Spec.VirtualMachines {
		key := types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}
		v := vmState{ref: ref}
		vm := &kubevirtv1.VirtualMachine{}
		switch err := r.Client.Get(ctx, key, vm, readOnly); {
		case apierrors.IsNotFound(err):
		case err != nil:
			return ctrl.Result{}, flow.Transient(srv1alpha1.ReasonReadFailed, fmt.Errorf("reading VirtualMachine %s: %w", key, err))
		default:
			v.vm, v.ask = vm, asked(vm)
		}
		vmi := &kubevirtv1.VirtualMachineInstance{}
		switch err := r.Client.Get(ctx, key, vmi, readOnly); {
		case apierrors.IsNotFound(err):
		case err != nil:
			return ctrl.Result{}, flow.Transient(srv1alpha1.ReasonReadFailed, fmt.Errorf("reading VirtualMachineInstance %s: %w", key, err))
		default:
			v.hasVMI = true
			v.vmiRunning = vmi.Status.Phase == kubevirtv1.Running && vmi.DeletionTimestamp.IsZero()
			v.instance.ReadInstance(vmi)
		}
		s.vms = append(s.vms, v)
	}
	s.loaded = true
	return ctrl.Result{}, nil
}

// applyDesiredState patches each VM whose run fields disagree with the group.
// Every VM is tried even when one fails, so that one bad VM cannot hold the rest;
// patches run in parallel (bounded) so that a large group changes state at once.
func (r *Reconciler) applyDesiredState(ctx context.Context, s *scope) (ctrl.Result, error) {
	desired := s.group.Spec.DesiredState
	if desired == "" {
		return ctrl.Result{}, nil
	}
	var run map[string]bool
	switch desired {
	case srv1alpha1.StateRunning:
		if hold := startHold(s); hold != "" {
			// The replicas' promotion events wake the group (promoted).
			s.holds = append(s.holds, hold)
			return ctrl.Result{}, nil
		}
		var err error
		if run, err = r.runBootPlan(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
	case srv1alpha1.StateStopped:
		if err := r.endBoot(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
	}
	type change struct {
		v       *vmState
		patched *kubevirtv1.VirtualMachine
	}
	var changes []change
	for i := range s.vms {
		v := &s.vms[i]
		if v.vm == nil {
			continue
		}
		if conflictingRunFields(v.vm) {
			v.problem = "sets both spec.running and spec.runStrategy, which KubeVirt rejects; remove one"
			continue
		}
		if run != nil && !run[v.key()] {
			v.held = heldBy(s.boot, v.key())
			continue
		}
		if r.patched.behind(v.vm) {
			v.ask = askedHalt
			if desired == srv1alpha1.StateRunning {
				v.ask = askedRun
			}
			continue
		}
		patched := v.vm.DeepCopy()
		if setRunning(patched, desired == srv1alpha1.StateRunning) {
			changes = append(changes, change{v, patched})
		}
	}
	s.asked = s.asked || len(changes) > 0
	err := flow.ForEach(parallelPatches, len(changes), func(i int) error {
		c := changes[i]
		switch err := r.Client.Patch(ctx, c.patched, client.MergeFrom(c.v.vm)); {
		case err == nil:
			r.patched.sent(c.patched)
			c.v.vm, c.v.ask = c.patched, asked(c.patched)
		case apierrors.IsNotFound(err):
			c.v.vm = nil // deleted since it was read
		default:
			return fmt.Errorf("patching VirtualMachine %s/%s: %w", c.v.ref.Namespace, c.v.ref.Name, err)
		}
		return nil
	})
	if err != nil {
		return ctrl.Result{}, flow.Transient(srv1alpha1.ReasonPatchFailed, err)
	}
	// A stage's timeout: nothing on the cluster wakes the group then.
	return ctrl.Result{RequeueAfter: s.bootAfter}, nil
}

// parallelPatches bounds the VM patches one reconcile has in flight.
const parallelPatches = 10

// writeStatus writes the status when it changed and records transitions as
// events. flow.StatusWriter updates the whole status with the resourceVersion
// it was read with: a stale cached copy fails with a conflict and is retried
// with a fresh one, so the server never keeps a wrong currentState (status
// changes do not requeue the group). A group deleted meanwhile is no error.
// A change that only reports progress (progressOnly) is held back to one
// write per progressInterval; it returns how long, and the reconcile after
// that writes the status then current. So is the status of a group in
// transition right after this controller asked its VMs or replicas to change
// (settle.go): their answers usually follow within the window, and the state
// they lead to is written once instead of each step on the way. Both are
// decided at the write, not at the start of the reconcile: a large group's
// reconcile takes longer than the window, which opens with its last ask.
func (r *Reconciler) writeStatus(ctx context.Context, s *scope) (time.Duration, error) {
	changed := !equality.Semantic.DeepEqual(s.before.Status, s.group.Status)
	out, err := r.statusWriter().Write(ctx, s.group, flow.Change{
		Changed: changed,
		At:      r.Clock.Now(),
		Progress: flow.Progress{
			Only:  changed && progressOnly(&s.before.Status, &s.group.Status),
			Items: len(s.group.Status.VirtualMachines),
		},
		Settling: flow.Settling{Asked: s.asked, Transitional: inTransition(s.group)},
	})
	if err != nil {
		return 0, fmt.Errorf("writing status: %w", err)
	}
	if out.Wrote {
		r.recordTransitions(s)
	}
	return out.Hold, nil
}

// progressInterval is the least time between two status writes of a group
// that only report progress: in a large group the VMs and replicas move one
// by one, and each write costs the API server and every watcher of the group
// (quorum-manager's caches among them). A group of more than
// progressPerVMs VMs waits longer, in proportion, up to longestProgress: its
// status grows with its VMs, and so does the time a step reports progress.
const (
	progressInterval = time.Second
	progressPerVMs   = 50
	longestProgress  = 10 * time.Second
)

func (r *Reconciler) statusWriter() *flow.StatusWriter {
	r.statusOnce.Do(func() {
		if r.status == nil {
			r.status = flow.NewStatusWriter(r.Client, nil, flow.WithPacer(flow.NewSettle(
				flow.NewThrottle(progressInterval).ScaledPer(progressPerVMs, longestProgress), settleWait, longestSettle)))
		}
	})
	return r.status
}

func (r *Reconciler) recordTransitions(s *scope) {
	r.recordRoleTransition(s)
	from, to := s.before.Status.CurrentState, s.group.Status.CurrentState
	if from == to {
		return
	}
	kind := corev1.EventTypeNormal
	if to == srv1alpha1.StateDegraded {
		kind = corev1.EventTypeWarning
	}
	if from == "" {
		from = "unknown"
	}
	r.Recorder.Eventf(s.group, kind, "StateChanged", "currentState %s -> %s (desired %q)", from, to, s.group.Spec.DesiredState)
}
