package guest

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
)

// ErrAgentNotResponding is returned by Freeze and Thaw for a guest whose
// agent does not answer. The words are libvirt's for a guest agent command to
// a domain whose agent is not connected (src/qemu/qemu_agent.c), which
// KubeVirt passes on from fsfreeze (pkg/virt-launcher/virtwrap/storage/fsfreeze.go).
var ErrAgentNotResponding = errors.New("Guest agent is not responding: QEMU guest agent is not connected") //nolint:staticcheck // libvirt's words

// freezeState is a guest's file system freeze, as its agent carries it out.
type freezeState struct {
	noAgent bool
	frozen  bool
	// boot is the VMI that was frozen.
	boot types.UID
	// thawed is closed when the guest thaws; writes wait on it.
	thawed chan struct{}
}

// SetAgent makes vm's guest agent answer (the default) or not.
func (g *Guests) SetAgent(vm types.NamespacedName, answers bool) {
	l := g.log(vm)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.freeze.noAgent = !answers
}

// OnBlock sets a function that runs inside every later Write batch after each
// acknowledged block but the last, with the number written so far: a test
// cuts a point there to catch a record half written. It must not call back
// into g for the same VM.
func (g *Guests) OnBlock(f func(vm types.NamespacedName, written int)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.onBlock = f
}

// Freeze freezes vm's file systems as the guest agent's guest-fsfreeze-freeze
// does (qemu-guest-agent, qga/commands-posix.c): the freeze hooks run first,
// and the application's hook lets it finish the record it is writing, so
// Freeze returns after the current Write batch; later batches wait until
// Thaw. Freezing a frozen guest succeeds (KubeVirt checks the agent's status
// first and does nothing, pkg/virt-launcher/virtwrap/storage/fsfreeze.go).
func (g *Guests) Freeze(vm types.NamespacedName) error {
	l := g.log(vm)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.freeze.noAgent {
		return fmt.Errorf("freeze of %s: %w", vm, ErrAgentNotResponding)
	}
	if !l.freeze.frozen {
		l.freeze.frozen = true
		l.freeze.boot = l.boot
		l.freeze.thawed = make(chan struct{})
	}
	return nil
}

// booted notes that the guest runs as VMI uid. A freeze lives in the running
// guest's kernel (qemu-guest-agent's guest-fsfreeze-freeze, qga/commands-posix.c,
// freezes the mounted file systems with FIFREEZE): a guest that was stopped
// frozen and boots again, on this cluster or another, mounts them thawed.
func (l *vmLog) booted(uid types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.freeze.frozen && l.freeze.boot != "" && l.freeze.boot != uid {
		l.freeze.frozen = false
		close(l.freeze.thawed)
	}
	l.boot = uid
}

// Thaw thaws vm's file systems; thawing a thawed guest succeeds.
func (g *Guests) Thaw(vm types.NamespacedName) error {
	l := g.log(vm)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.freeze.noAgent {
		return fmt.Errorf("thaw of %s: %w", vm, ErrAgentNotResponding)
	}
	if l.freeze.frozen {
		l.freeze.frozen = false
		close(l.freeze.thawed)
	}
	return nil
}

// Frozen says whether vm's file systems are frozen.
func (g *Guests) Frozen(vm types.NamespacedName) bool {
	l := g.log(vm)
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.freeze.frozen
}

// lockThawed locks l once the guest is not frozen: a write to a frozen file
// system blocks until it thaws.
func (l *vmLog) lockThawed(ctx context.Context) error {
	for {
		l.mu.Lock()
		if !l.freeze.frozen {
			return nil
		}
		thawed := l.freeze.thawed
		l.mu.Unlock()
		select {
		case <-thawed:
		case <-ctx.Done():
			return fmt.Errorf("write to a frozen guest: %w", ctx.Err())
		}
	}
}
