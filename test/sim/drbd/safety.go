package drbdsim

import (
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/siterecovery/siterecovery/test/sim/drbd/internal/sim"
)

// Primaries records every moment at which two nodes of a resource are both
// Primary while connected: the split brain that DRBD's own refusal and the
// failover flow's ordering exist to prevent. Two Primaries that cannot reach
// each other (a fenced or cut-off source) are allowed and not recorded. It
// sees every change of the world, not samples.
type Primaries struct {
	mu         sync.Mutex
	violations []string
	changes    int
	open       map[string]bool // resource/pair in violation now
}

// WatchPrimaries starts recording on the in-memory world of the fabric (see
// UseMemory) until the test ends.
func (f *Fabric) WatchPrimaries(t testing.TB) *Primaries {
	t.Helper()
	p := &Primaries{open: map[string]bool{}}
	if !sim.Observe(f.StateDir, p.observe) {
		t.Fatalf("WatchPrimaries: the world of %s is not kept in memory (UseMemory)", f.StateDir)
	}
	return p
}

func (p *Primaries) observe(w *sim.World) {
	now := map[string]bool{}
	for _, name := range sortedResources(w) {
		r := w.Resources[name]
		hosts := make([]string, 0, len(r.Nodes))
		for h := range r.Nodes {
			hosts = append(hosts, h)
		}
		sort.Strings(hosts)
		for i, a := range hosts {
			for _, b := range hosts[i+1:] {
				na, nb := r.Nodes[a], r.Nodes[b]
				if na.Role == "Primary" && nb.Role == "Primary" && r.Connected(na, nb) {
					now[name+": "+a+" and "+b] = true
				}
			}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.changes++
	for k := range now {
		if !p.open[k] { // one entry for each time it begins
			p.violations = append(p.violations, fmt.Sprintf("%s Primary while connected at %s", k, time.Now().Format("15:04:05.000")))
		}
	}
	p.open = now
}

func sortedResources(w *sim.World) []string {
	out := make([]string, 0, len(w.Resources))
	for name := range w.Resources {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// Violations returns the moments recorded so far.
func (p *Primaries) Violations() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.violations...)
}

// Changes counts the world changes seen, so that a test can tell a recorder
// that saw nothing from a safe run.
func (p *Primaries) Changes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.changes
}
