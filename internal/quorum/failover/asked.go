package failover

import (
	"sync"
	"time"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// askedFor is how long a role this controller set counts as asked for, whatever
// the cache shows: the remote caches show a patch only some milliseconds after
// it succeeded, and every DRBD status change in between wakes the request.
const askedFor = 2 * time.Second

// askedRole is what setRole sent to one replica.
type askedRole struct {
	role   srv1alpha1.DRBDRole
	force  bool
	quorum srv1alpha1.QuorumSettings
	at     time.Time
}

// askedRoles remembers the roles set in the last askedFor, so that a reconcile
// reading a replica from a cache that has not caught up with the patch yet does
// not send the same patch again. After askedFor a replica whose spec still
// differs (someone changed it back) is patched again.
type askedRoles struct {
	mu sync.Mutex
	m  map[string]askedRole
}

// recent reports whether want was sent to key less than askedFor before now.
func (a *askedRoles) recent(key string, want askedRole, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	got, ok := a.m[key]
	return ok && now.Sub(got.at) < askedFor &&
		got.role == want.role && got.force == want.force && got.quorum == want.quorum
}

// record notes that want was sent to key at want.at, and forgets what expired.
func (a *askedRoles) record(key string, want askedRole) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[string]askedRole{}
	}
	for k, v := range a.m {
		if want.at.Sub(v.at) >= askedFor {
			delete(a.m, k)
		}
	}
	a.m[key] = want
}
