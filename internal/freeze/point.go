package freeze

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// thawTimeout bounds the thaw calls; they run even when the caller's context
// has ended, since a guest left frozen stops its applications.
const thawTimeout = 10 * time.Second

// maxMessage is the API's bound on a point's message.
const maxMessage = 1024

// maxVMs is the API's bound on a point's crashConsistentVMs.
const maxVMs = 256

// Options describe one point.
type Options struct {
	// Bound is how long a guest may stay frozen (the group's
	// freezeTimeoutSeconds). The freeze calls get a third of it, so that a
	// guest whose agent does not answer leaves time to cut the point.
	Bound time.Duration
	// Source is what takes the point (ConsistencyPoint.source).
	Source string
	// Now is the clock; time.Now if nil.
	Now func() time.Time
	// Hold leaves the guests frozen when take succeeds: take stopped them
	// (a planned failover's stop), and a guest still running is thawed by
	// KubeVirt at the bound. When take fails they are thawed as always.
	Hold bool
}

func (o Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// Point freezes vms, runs take while they are frozen and thaws them, and
// returns the consistency the point reached. take gets a context that ends at
// the freeze bound. A VM that could not be frozen makes the point Crash and
// is named in it; take runs regardless. When take fails, Point thaws every VM
// and returns take's error (no point was taken). Thaw failures do not change
// the point (it was cut while frozen); they are named in its message, and
// KubeVirt thaws those guests at the bound.
func Point(ctx context.Context, c Client, vms []types.NamespacedName, o Options, take func(context.Context) error) (srv1alpha1.ConsistencyPoint, error) {
	start := o.now()
	deadline := start.Add(o.Bound)
	freezeCtx, cancelFreeze := context.WithTimeout(ctx, o.Bound/3)
	frozen, refused := freezeAll(freezeCtx, c, vms, o.Bound, o.now)
	cancelFreeze()

	takeCtx, cancelTake := context.WithDeadline(ctx, deadline)
	err := take(takeCtx)
	cancelTake()
	cut := o.now()

	var stuck map[types.NamespacedName]string
	if err != nil || !o.Hold {
		thawCtx, cancelThaw := context.WithTimeout(context.WithoutCancel(ctx), thawTimeout)
		// Thaw the refused ones too: a freeze that timed out may have reached
		// the guest after all; thawing a thawed guest is a no-op in KubeVirt.
		stuck = thawAll(thawCtx, c, vms)
		cancelThaw()
	}
	thawed := o.now()
	if err != nil {
		return srv1alpha1.ConsistencyPoint{}, err
	}
	if cut.After(deadline) {
		for _, vm := range vms {
			if _, ok := refused[vm]; !ok {
				refused[vm] = fmt.Sprintf("the point was cut %s after the freeze began, beyond the bound of %s at which KubeVirt thaws the guest", cut.Sub(start).Round(time.Millisecond), o.Bound)
			}
		}
	}
	return pointOf(o.Source, cut, frozen, refused, stuck, thawed), nil
}

// freezeAll freezes every VM at once and returns when each froze (by the end
// of its call) and why the others did not.
func freezeAll(ctx context.Context, c Client, vms []types.NamespacedName, bound time.Duration, now func() time.Time) (map[types.NamespacedName]time.Time, map[types.NamespacedName]string) {
	var mu sync.Mutex
	frozen := map[types.NamespacedName]time.Time{}
	refused := map[types.NamespacedName]string{}
	var wg sync.WaitGroup
	for _, vm := range vms {
		wg.Go(func() {
			began := now()
			err := c.Freeze(ctx, vm, bound)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				refused[vm] = err.Error()
				return
			}
			frozen[vm] = began
		})
	}
	wg.Wait()
	return frozen, refused
}

// thawAll thaws every VM at once and returns why some could not be thawed.
func thawAll(ctx context.Context, c Client, vms []types.NamespacedName) map[types.NamespacedName]string {
	var mu sync.Mutex
	stuck := map[types.NamespacedName]string{}
	var wg sync.WaitGroup
	for _, vm := range vms {
		wg.Go(func() {
			if err := c.Unfreeze(ctx, vm); err != nil {
				mu.Lock()
				stuck[vm] = err.Error()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return stuck
}

// pointOf builds the status of a point cut at cut.
func pointOf(source string, cut time.Time, frozen map[types.NamespacedName]time.Time, refused, stuck map[types.NamespacedName]string, thawed time.Time) srv1alpha1.ConsistencyPoint {
	p := srv1alpha1.ConsistencyPoint{Time: metav1.NewTime(cut), Source: source, Consistency: srv1alpha1.ConsistencyApplication}
	for vm, began := range frozen {
		if _, ok := refused[vm]; ok {
			continue
		}
		p.FrozenMilliseconds = max(p.FrozenMilliseconds, thawed.Sub(began).Milliseconds())
		p.FrozenVMs = append(p.FrozenVMs, vm.String())
	}
	sort.Strings(p.FrozenVMs)
	if len(p.FrozenVMs) > maxVMs {
		p.FrozenVMs = p.FrozenVMs[:maxVMs]
	}
	var msgs []string
	for vm, why := range refused {
		p.CrashConsistentVMs = append(p.CrashConsistentVMs, vm.String())
		msgs = append(msgs, fmt.Sprintf("%s not frozen: %s", vm, why))
	}
	if len(refused) > 0 {
		p.Consistency = srv1alpha1.ConsistencyCrash
	}
	for vm, why := range stuck {
		if _, ok := refused[vm]; !ok {
			msgs = append(msgs, fmt.Sprintf("%s not thawed (KubeVirt thaws it at the bound): %s", vm, why))
		}
	}
	sort.Strings(p.CrashConsistentVMs)
	if len(p.CrashConsistentVMs) > maxVMs {
		p.CrashConsistentVMs = p.CrashConsistentVMs[:maxVMs]
	}
	sort.Strings(msgs)
	p.Message = truncate(strings.Join(msgs, "; "), maxMessage)
	return p
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// CrashPoint is the point of a group that does not ask for application
// consistency, or whose point no freeze could cover.
func CrashPoint(source string, at time.Time, message string) srv1alpha1.ConsistencyPoint {
	return srv1alpha1.ConsistencyPoint{Time: metav1.NewTime(at), Source: source, Consistency: srv1alpha1.ConsistencyCrash, Message: truncate(message, maxMessage)}
}
