package sim

import "sync"

// changes tells event streams running in this process that Update wrote the
// state, so that an in-process events2 reports a change at once instead of at
// its next poll. Streams in other processes (the drbdsim binary) still poll.
var changes = &broadcast{ch: make(chan struct{})}

type broadcast struct {
	mu sync.Mutex
	ch chan struct{}
}

// wait returns a channel closed by the next notify.
func (b *broadcast) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ch
}

func (b *broadcast) notify() {
	b.mu.Lock()
	defer b.mu.Unlock()
	close(b.ch)
	b.ch = make(chan struct{})
}
