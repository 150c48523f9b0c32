package protection

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// ClaimRecheckInterval is how often a Protected request checks that both
// clusters' DRBDAllocations still hold its claim. The allocation is guarded
// by pg-controller's webhook, so a lost claim means an admin deleted it
// anyway; minutes are soon enough, since only a new protect in the gap can
// be hurt, and a re-check costs two GETs per request.
const ClaimRecheckInterval = 5 * time.Minute

// claimRecheckJitter spreads the re-checks of requests Protected at the same
// moment: each interval is the re-check interval ± 20 %.
const claimRecheckJitter = 0.2

// recheckRand returns a number in [0, 1); tests replace it.
var recheckRand = rand.Float64

// claimRechecks is when each Protected request re-checks its claim next.
// It lives in memory: after a restart every request starts afresh with a
// random first delay within one interval, so that a thousand requests do not
// all re-check at once ahead of new work on the controller's queue.
type claimRechecks struct {
	mu  sync.Mutex
	due map[types.NamespacedName]recheckDue
}

type recheckDue struct {
	uid types.UID
	at  time.Time
}

// next reports whether req's re-check is due at now and, if not, how long
// until it is. A request seen for the first time (or recreated under its
// name) is scheduled at a random point of the next interval.
func (c *claimRechecks) next(key types.NamespacedName, uid types.UID, now time.Time, every time.Duration) (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.due == nil {
		c.due = map[types.NamespacedName]recheckDue{}
	}
	d, ok := c.due[key]
	if !ok || d.uid != uid {
		wait := time.Duration(recheckRand() * float64(every))
		c.due[key] = recheckDue{uid: uid, at: now.Add(wait)}
		return max(wait, time.Millisecond), false
	}
	if now.Before(d.at) {
		return d.at.Sub(now), false
	}
	return 0, true
}

// checked schedules req's next re-check one jittered interval after now and
// returns the wait.
func (c *claimRechecks) checked(key types.NamespacedName, uid types.UID, now time.Time, every time.Duration) time.Duration {
	wait := time.Duration(float64(every) * (1 - claimRecheckJitter + 2*claimRecheckJitter*recheckRand()))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.due == nil {
		c.due = map[types.NamespacedName]recheckDue{}
	}
	c.due[key] = recheckDue{uid: uid, at: now.Add(wait)}
	return wait
}

func (c *claimRechecks) forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.due, key)
}

// recheckClaim is the reconcile of a request in a terminal phase: a
// Protected one holds its claim on both clusters (hold), on its own
// schedule whatever woke it. It never fails the request; a conflict it
// finds is shown as ConditionClaimConflict (written, and warned about, only
// when it changes), a restored claim is an event, and a cluster it cannot
// reach is tried at the next interval.
func (r *Reconciler) recheckClaim(ctx context.Context, req *srv1alpha1.ProtectionRequest) (ctrl.Result, error) {
	key := types.NamespacedName{Namespace: req.Namespace, Name: req.Name}
	if !holdsClaim(req) {
		r.rechecks.forget(key)
		return ctrl.Result{}, nil
	}
	wait, due := r.rechecks.next(key, req.UID, r.now(), r.recheckEvery())
	if !due {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	next := r.rechecks.checked(key, req.UID, r.now(), r.recheckEvery())
	s := newScope(req, r.now())
	if err := r.load(ctx, s); err != nil {
		log.FromContext(ctx).V(1).Info("claim re-check postponed", "reason", err.Error())
		return ctrl.Result{RequeueAfter: next}, nil
	}
	c := &claimer{
		clusters: []allocCluster{{name: s.primaryCluster, c: s.primary.Direct}, {name: s.target, c: s.dr.Direct}},
		self:     srv1alpha1.DRBDClaim{RequestUID: string(req.UID), DRNamespace: req.Namespace, Request: req.Name},
		now:      r.now(),
	}
	outcomes, err := c.hold(ctx, req.Status.Port, requestMinors(req))
	for _, o := range outcomes {
		if o.restored {
			r.warn(req, EventClaimRestored, restoredMessage(req, o))
		}
	}
	if err != nil {
		// Only a complete re-check may set or clear the conflict: a cluster
		// not read says nothing about it.
		log.FromContext(ctx).Info("claim re-check failed; tried again at the next interval", "error", err.Error())
		return ctrl.Result{RequeueAfter: next}, nil
	}
	if err := r.showClaimConflict(ctx, s, outcomes); err != nil {
		log.FromContext(ctx).Info("showing the claim conflict failed; tried again at the next interval", "error", err.Error())
	}
	return ctrl.Result{RequeueAfter: next}, nil
}

// firstRecheck schedules the claim re-check of a request that has just become
// Protected, one interval from now. Its own status write does not wake it (the
// watch passes spec and annotation changes only), so without this a request
// whose workload objects settled before it ended would never re-check until
// the manager restarts.
func (r *Reconciler) firstRecheck(req *srv1alpha1.ProtectionRequest) ctrl.Result {
	if !holdsClaim(req) {
		return ctrl.Result{}
	}
	key := types.NamespacedName{Namespace: req.Namespace, Name: req.Name}
	return ctrl.Result{RequeueAfter: r.rechecks.checked(key, req.UID, r.now(), r.recheckEvery())}
}

// holdsClaim reports whether req is Protected with a claim to re-check.
func holdsClaim(req *srv1alpha1.ProtectionRequest) bool {
	return req.Status.Phase == srv1alpha1.ProtectionProtected && req.Status.Port != 0
}

func (r *Reconciler) recheckEvery() time.Duration {
	if r.Options.ClaimRecheckInterval > 0 {
		return r.Options.ClaimRecheckInterval
	}
	return ClaimRecheckInterval
}

func (r *Reconciler) warn(req *srv1alpha1.ProtectionRequest, reason, msg string) {
	if r.Recorder != nil {
		r.Recorder.Event(req, corev1.EventTypeWarning, reason, msg)
	}
}
