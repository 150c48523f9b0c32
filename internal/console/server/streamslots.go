package server

import "sync"

// streamSlots bounds the event streams each session holds open. Each stream
// runs a watch per kind and DR namespace with the user's token, so without a
// bound one session could open watches on the API server without limit.
//
// The stream over the bound is refused (429) rather than the oldest closed:
// a closed EventSource reconnects on its own after the retry delay, so with
// one tab more than the bound each reconnect would close another tab's
// stream, and the tabs would take turns re-listing and re-watching every kind
// forever, the load the bound exists to prevent. Refused, the extra tab gets
// no live updates and the others keep theirs.
type streamSlots struct {
	max  int
	mu   sync.Mutex
	open map[string]int // session id -> open streams
}

// acquire takes a slot of the session; release gives it back and may be
// called more than once.
func (s *streamSlots) acquire(session string) (release func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[session] >= s.max {
		return nil, false
	}
	s.open[session]++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.open[session]--
			if s.open[session] <= 0 {
				delete(s.open, session)
			}
		})
	}, true
}
