package server_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sse is one open event stream, read as a browser's EventSource would.
type sse struct {
	events chan sseEvent
	done   chan struct{} // closed when the server ends the stream
	cancel context.CancelFunc
	// lines is what the server sent, read only after done; seen is the
	// browser's record, which ended adds the lines to.
	lines strings.Builder
	seen  *strings.Builder
}

type sseEvent struct{ name, data string }

// stream opens /api/events with the browser's cookies. It returns once the
// server has answered, so the request (and any token refresh it made) is
// done. The stream is closed at the end of the test.
func (b *browser) stream(t *testing.T) *sse {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.base+"/api/events", http.NoBody)
	require.NoError(t, err)
	// No client timeout: it would cut the stream, not just its start.
	hc := &http.Client{Jar: b.hc.Jar, Transport: b.hc.Transport}
	resp, err := hc.Do(req) //nolint:bodyclose // read closes it when the stream ends
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	s := &sse{events: make(chan sseEvent, 64), done: make(chan struct{}), cancel: cancel, seen: b.seen}
	go s.read(resp.Body)
	return s
}

// read parses the stream into events until the server ends it.
func (s *sse) read(body io.ReadCloser) {
	defer close(s.done)
	defer body.Close()
	sc := bufio.NewScanner(body)
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		s.lines.WriteString(line + "\n")
		switch {
		case line == "":
			if ev.name != "" {
				s.events <- ev
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			ev.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.data = strings.TrimPrefix(line, "data: ")
		}
	}
}

// next waits for the next event other than a change, failing after d.
func (s *sse) next(t *testing.T, d time.Duration) string {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case ev := <-s.events:
			if ev.name != "change" {
				return ev.name
			}
		case <-s.done:
			t.Fatal("the stream ended without an event")
		case <-deadline:
			t.Fatalf("no event within %s", d)
		}
	}
}

// change waits for a change event whose data contains want, calling poke
// every half second until it arrives (a watch opened a moment before may
// not yet see what poke changes), and failing after d.
func (s *sse) change(t *testing.T, want string, poke func(), d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	poke()
	for {
		select {
		case ev := <-s.events:
			if ev.name == "change" && strings.Contains(ev.data, want) {
				return
			}
		case <-tick.C:
			poke()
		case <-s.done:
			t.Fatal("the stream ended before the change arrived")
		case <-deadline:
			t.Fatalf("no change naming %s within %s", want, d)
		}
	}
}

// ended waits until the server closes the stream, and adds what it sent to
// what the browser saw.
func (s *sse) ended(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-s.done:
		s.seen.WriteString(s.lines.String())
	case <-time.After(d):
		t.Fatalf("the server kept the stream open for %s after ending it", d)
	}
}
