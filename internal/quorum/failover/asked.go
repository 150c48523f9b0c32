package failover

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// askedStates remembers, per request and cluster, the step (run state and
// DRBD role) a phase has made sure the group's copy asks, and the copy's
// generation that showed it: a phase asks on each of its reconciles, and the
// read setStep makes to confirm it (the cache alone could skip a write for
// good) is then needed only once. Whatever the memo holds, a cached copy at that
// generation or later that asks something else sends the phase back to the
// API server: someone changed it since. A restarted quorum-manager starts
// with an empty memo.
type askedStates struct {
	mu sync.Mutex
	m  map[string]map[string]askedState // request key → cluster → asked
}

type askedState struct {
	request    types.UID
	step       groupStep
	copy       types.UID
	generation int64
}

// ask makes sure the group's copy on rc asks st (setStep), unless this
// request already did and the cached copy shows nothing newer against it.
func (a *askedStates) ask(ctx context.Context, s *scope, rc *remote.Remote, st groupStep) error {
	reqKey, cluster := client.ObjectKeyFromObject(s.req).String(), rc.Key.Cluster
	group := client.ObjectKey{Namespace: s.req.Namespace, Name: s.group.Name}
	if prev, ok := a.get(reqKey, cluster); ok && prev.request == s.req.UID && prev.step.equal(st) {
		pg := &srv1alpha1.ProtectionGroup{}
		if err := rc.Cached.Get(ctx, group, pg); err == nil && pg.UID == prev.copy &&
			(pg.Generation < prev.generation || asksStep(pg, st)) {
			return nil
		}
	}
	pg, err := setStep(ctx, rc, group.Namespace, group.Name, st)
	if err != nil || pg.UID == "" {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[string]map[string]askedState{}
	}
	if a.m[reqKey] == nil {
		a.m[reqKey] = map[string]askedState{}
	}
	a.m[reqKey][cluster] = askedState{request: s.req.UID, step: st, copy: pg.UID, generation: pg.Generation}
	return nil
}

func (a *askedStates) get(reqKey, cluster string) (askedState, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	v, ok := a.m[reqKey][cluster]
	return v, ok
}

// forget drops a finished or deleted request.
func (a *askedStates) forget(reqKey string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.m, reqKey)
}
