package remote

import (
	"context"
	"time"
)

// Prober is a manager Runnable that probes every connected cluster at a fixed
// interval and tells the event sources about changes of verdict, so that
// conditions follow reality without any controller requeueing hot.
type Prober struct {
	Manager  *Manager
	Interval time.Duration
}

// Start probes until ctx ends.
func (p *Prober) Start(ctx context.Context) error {
	interval := p.Interval
	if interval <= 0 {
		interval = 10 * time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		p.ProbeAll()
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// ProbeAll probes every connection once.
func (p *Prober) ProbeAll() {
	m := p.Manager
	m.mu.RLock()
	conns := make([]*connection, 0, len(m.clusters))
	for _, c := range m.clusters {
		conns = append(conns, c)
	}
	m.mu.RUnlock()
	for _, c := range conns {
		if c.probe(m.clock.Now()) {
			m.notify(c.key)
		}
	}
}

// NeedLeaderElection is false: every replica keeps its caches warm and probed.
func (p *Prober) NeedLeaderElection() bool { return false }
