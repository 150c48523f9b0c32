package failover

import (
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// heartbeats judges the agents' heartbeat Leases by watching them change, on
// quorum-manager's own elapsed time, instead of comparing a Lease's renewTime
// (the workload node's wall clock) with quorum-manager's wall clock: a jump of
// the latter would make every renewing agent look silent, or a silent one
// look alive. A Lease is silent once it has not changed for longer than its
// duration and heartbeatGrace, counted from when it was last seen changing.
type heartbeats struct {
	mu   sync.Mutex
	seen map[string]heartbeatSeen
	// reads are the Leases as last read, and when (elapsed clock), for
	// leaseReuse.
	reads map[string]leaseRead
}

type leaseRead struct {
	lease *coordinationv1.Lease
	at    time.Time
}

// recent is the Lease of key read less than leaseReuse before now (elapsed
// clock), if any.
func (h *heartbeats) recent(key string, now time.Time) (*coordinationv1.Lease, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	rd, ok := h.reads[key]
	if !ok || now.Before(rd.at) || now.Sub(rd.at) >= leaseReuse {
		return nil, false
	}
	return rd.lease, true
}

// read records l as read at now (elapsed clock).
func (h *heartbeats) read(key string, l *coordinationv1.Lease, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.reads == nil {
		h.reads = map[string]leaseRead{}
	}
	h.reads[key] = leaseRead{lease: l, at: now}
}

// heartbeatSeen is a Lease as last seen changing: its renewal and version, and
// the local elapsed-clock time its last change is counted from.
type heartbeatSeen struct {
	renew   time.Time
	version string
	changed time.Time
}

// heartbeatState is what is known against an agent: when its Lease was last
// renewed (its own clock, for the message), the wall time its silence will
// have lasted long enough to hold for, and whether it already has.
type heartbeatState struct {
	renewed string
	expiry  time.Time
	silent  bool
}

// observe records l, read at wall time now and elapsed-clock time elapsed.
// A Lease first seen is counted from its renewTime when that lies within
// its duration of now; otherwise the two clocks disagree (quorum-manager's
// jumped, or the agent has long been silent) and it is counted from now,
// which at worst says a silent agent is silent one Lease duration late.
func (h *heartbeats) observe(key string, l *coordinationv1.Lease, now time.Time, elapsed clock.PassiveClock) heartbeatState {
	renew := l.Spec.RenewTime.Time
	duration := time.Duration(ptr.Deref(l.Spec.LeaseDurationSeconds, 0)) * time.Second
	local := elapsed.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.seen == nil {
		h.seen = map[string]heartbeatSeen{}
	}
	s, ok := h.seen[key]
	switch {
	case !ok:
		age := now.Sub(renew)
		if age < 0 || age > duration {
			age = 0
		}
		s = heartbeatSeen{renew: renew, version: l.ResourceVersion, changed: local.Add(-age)}
	case !s.renew.Equal(renew) || s.version != l.ResourceVersion:
		s = heartbeatSeen{renew: renew, version: l.ResourceVersion, changed: local}
	}
	h.seen[key] = s
	quiet := local.Sub(s.changed)
	return heartbeatState{
		renewed: renew.UTC().Format(time.RFC3339),
		expiry:  now.Add(duration - quiet),
		silent:  quiet > duration+heartbeatGrace,
	}
}
