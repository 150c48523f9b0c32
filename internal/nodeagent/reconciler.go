package nodeagent

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/drbd"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// Finalizer keeps a DRBDResource until the agent has taken the DRBD resource down
// and removed its file.
const Finalizer = "siterecovery.trilio.io/drbd-node-agent"

// notSyncedRetry is how soon a reconcile retries while the DRBD state is not loaded.
const notSyncedRetry = 250 * time.Millisecond

// EventRecorder is the part of the events API the agent uses.
type EventRecorder interface {
	Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any)
}

// RBAC on the workload cluster: the agent reads DRBDResources, keeps its finalizer
// on them with updates and writes their status, reads the PVC behind a disk
// uncached, and records events.
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=drbdresources,verbs=get;list;watch;update
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=drbdresources/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=core,resources=persistentvolumeclaims,verbs=get
// +kubebuilder:rbac:groups=core,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler drives the DRBDResources of one node.
type Reconciler struct {
	Client    client.Client
	Config    Config // completed
	Adm       *drbd.Adm
	Watcher   *Watcher
	PVCs      client.Reader // reads the backing and metadata PVCs
	Devices   DeviceResolver
	Coalescer *Coalescer
	Recorder  EventRecorder
	Clock     clock.Clock

	// PeerSecrets reads the DRBD peer-auth Secrets (peerauth.go).
	PeerSecrets *PeerSecrets
	// tls remembers that the node's DRBD supports TLS (tls.go).
	tls tlsProbe

	wake   chan event.GenericEvent
	owners owners

	mu    sync.Mutex
	memos map[types.NamespacedName]*memo
}

// memo is what the agent remembers about a resource between reconciles.
type memo struct {
	volumes string           // volumesKey the devices were resolved for
	devices map[int32]string // resolved backing devices; nil: none yet
	// metaDevices are the resolved metadata devices of the volumes that keep
	// their metadata on a PVC of their own.
	metaDevices map[int32]string
	applied     string    // resource file last applied by up or adjust
	upIssued    time.Time // last successful "drbdadm up", until events2 shows it
	promotion   retryGate // backoff of refused promotions
	adm         retryGate // backoff of failed drbdadm configuration commands
	reconnect   retryGate // backoff of connects of a StandAlone connection
	// answered is the spec.statusRequest last read (answerStatusRequest),
	// at readAt.
	answered string
	readAt   time.Time
	// claimsCheckedAt is when the claims of devices were last checked;
	// untrusted, when not empty, says which one is no longer trusted
	// (claimcheck.go).
	claimsCheckedAt time.Time
	untrusted       string
}

// scope carries one reconcile's inputs and findings between phases and setters.
type scope struct {
	obj     *srv1alpha1.DRBDResource
	before  srv1alpha1.DRBDResourceStatus
	key     types.NamespacedName
	memo    *memo
	log     logr.Logger
	now     time.Time // reconcile start, from the injected clock
	tracked drbd.ResourceStatus
	up      bool // DRBD knows the resource (tracked, or "up" just succeeded)
	// stalled: a phase stopped on what only a spec change fixes; the resource
	// is Stalled, not Reconciling.
	stalled bool
	// needsAdjust: the resource file changed, or was not applied since agent start.
	needsAdjust bool
	// rendered is the resource file this reconcile wrote.
	rendered string
	// roleRan: the role phase ran; otherwise RoleApplied is left as it was.
	roleRan bool
	// roleCommanded: this reconcile ran drbdadm primary or secondary, and it
	// succeeded.
	roleCommanded bool
	devices       map[int32]string
	// untrusted: a claim of the devices is no longer trusted; the replica is
	// held as it runs (holdUntrusted).
	untrusted bool
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx)
	obj := &srv1alpha1.DRBDResource{}
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if obj.Spec.NodeName != r.Config.NodeName {
		return ctrl.Result{}, nil // another node's replica
	}
	if !r.Watcher.Synced() {
		return ctrl.Result{RequeueAfter: notSyncedRetry}, nil
	}
	s := &scope{obj: obj, before: *obj.Status.DeepCopy(), key: req.NamespacedName,
		memo: r.memo(req.NamespacedName), log: logger, now: r.Clock.Now()}
	r.observe(s)
	if !obj.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	// The phases run in order until one fails. A failure that waits or stalls
	// is shown as its False condition and the status is still written; any
	// other error goes to the rate-limited retry without a status write.
	res, err := flow.RunPhases(ctx, s,
		r.ensureFinalizer, r.claimName, r.configure, r.createMetadata, r.bringUp, r.applyRole, r.discardData, r.reconnect)
	if e := flow.As(err); e != nil && e.Kind != flow.KindTransient {
		setCondition(s, falseCondition(e, s.obj.Generation))
		s.stalled = e.Kind == flow.KindStalled
		s.log.V(1).Info("phase stopped", "condition", e.Condition, "reason", e.Reason, "message", e.Error())
	}
	if res, err = flow.Result(res, err); err != nil {
		return res, err
	}
	if !r.answerStatusRequest(ctx, s) {
		res = flow.Soonest(res, ctrl.Result{RequeueAfter: statusReadRetry})
	}
	r.observe(s) // commands, and a reading, may have changed what DRBD reports
	if s.roleCommanded {
		if s.tracked.Role != string(wantedRole(s.obj)) {
			// events2 has not shown the new role yet. When it does, it wakes this
			// resource, and that reconcile writes the role with RoleApplied in
			// one status write: writing now would cost a role change of every
			// replica in a failover one more write for a state that lasts as
			// long as events2 takes to report it.
			return res, nil
		}
		setRoleApplied(s, s.tracked.Role)
	}
	for _, set := range statusSetters {
		set(r, s)
	}
	wres, err := r.writeStatus(ctx, s)
	return flow.Soonest(res, wres), err
}

// observe loads the tracked DRBD state into the scope.
func (r *Reconciler) observe(s *scope) {
	s.tracked, s.up = r.Watcher.Get(s.obj.Name)
	if s.up {
		s.memo.upIssued = time.Time{}
	} else if !s.memo.upIssued.IsZero() && r.Clock.Since(s.memo.upIssued) < upGrace {
		s.up = true // events2 has not reported our "up" yet
	}
}

// statusReadRetry is how soon a failed reading of DRBD's figures is retried.
const statusReadRetry = time.Second

// upGrace is how long a successful "up" counts although events2 has not shown it.
const upGrace = 10 * time.Second

func (r *Reconciler) memo(key types.NamespacedName) *memo {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.memos[key]
	if m == nil {
		m = &memo{}
		r.memos[key] = m
	}
	return m
}

func (r *Reconciler) forget(key types.NamespacedName, drbdName string) {
	r.mu.Lock()
	delete(r.memos, key)
	r.mu.Unlock()
	r.owners.release(drbdName, key)
	r.Coalescer.Forget(key.String())
}

// wakeFor turns a DRBD state change into reconcile requests.
func (r *Reconciler) wakeFor(ctx context.Context, drbdName string) {
	for _, key := range r.owners.keys(drbdName) {
		ev := event.GenericEvent{Object: &srv1alpha1.DRBDResource{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}
		select {
		case r.wake <- ev:
		case <-ctx.Done():
			return
		}
	}
}

// owners maps DRBD resource names (the object name) to the DRBDResource using it on
// this node: two namespaces must not drive the same DRBD resource.
type owners struct {
	mu sync.Mutex
	m  map[string]types.NamespacedName
}

func (o *owners) claim(name string, key types.NamespacedName) (types.NamespacedName, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[string]types.NamespacedName{}
	}
	if cur, ok := o.m[name]; ok && cur != key {
		return cur, false
	}
	o.m[name] = key
	return key, true
}

func (o *owners) release(name string, key types.NamespacedName) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m[name] == key {
		delete(o.m, name)
	}
}

// keys returns the owner of name, or every owner for "".
func (o *owners) keys(name string) []types.NamespacedName {
	o.mu.Lock()
	defer o.mu.Unlock()
	if name != "" {
		if k, ok := o.m[name]; ok {
			return []types.NamespacedName{k}
		}
		return nil
	}
	out := make([]types.NamespacedName, 0, len(o.m))
	for _, k := range o.m {
		out = append(out, k)
	}
	return out
}
