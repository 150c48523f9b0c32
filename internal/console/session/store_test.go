package session

import (
	"errors"
	"sync"
	"testing"
	"time"
)

func TestExpiry(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := NewStore(10*time.Minute, time.Hour)
	st.Now = func() time.Time { return now }
	var ended []string
	st.OnEnd(func(id string) { ended = append(ended, id) })

	s, err := st.Create("alice", nil, "secret")
	if err != nil {
		t.Fatal(err)
	}
	if s.ID == s.CSRF || len(s.ID) < 40 {
		t.Fatalf("id %q and csrf %q must be distinct random values", s.ID, s.CSRF)
	}
	// Used every 9 minutes, the session outlives its idle expiry...
	for range 6 {
		now = now.Add(9 * time.Minute)
		if _, ok := st.Get(s.ID); !ok {
			t.Fatalf("session ended at %s while in use", now)
		}
	}
	// ...but not its absolute expiry.
	now = now.Add(7 * time.Minute)
	if _, ok := st.Get(s.ID); ok {
		t.Fatal("session outlived its absolute expiry")
	}
	if len(ended) != 1 || ended[0] != s.ID {
		t.Fatalf("OnEnd saw %v", ended)
	}

	idle, _ := st.Create("bob", nil, "t2")
	now = now.Add(11 * time.Minute)
	st.Sweep()
	if st.Len() != 0 {
		t.Fatal("Sweep kept an idle session")
	}
	if _, ok := st.Get(idle.ID); ok {
		t.Fatal("idle session still served")
	}
}

func TestCSRFMatches(t *testing.T) {
	st := NewStore(time.Minute, time.Hour)
	a, _ := st.Create("a", nil, "x")
	b, _ := st.Create("b", nil, "y")
	if !a.CSRFMatches(a.CSRF) || a.CSRFMatches(b.CSRF) || a.CSRFMatches("") {
		t.Fatal("CSRF must match only the session's own token")
	}
}

// TestRenewIsSerialised checks that concurrent renewals of one session run
// one at a time and each sees what the previous one stored, so that a
// rotated refresh token is used once.
func TestRenewIsSerialised(t *testing.T) {
	st := NewStore(time.Minute, time.Hour)
	s, _ := st.CreateWith("a", nil, Credentials{Token: "t0", RefreshToken: "r0"})
	var wg sync.WaitGroup
	var mu sync.Mutex
	refreshed := 0
	for range 8 {
		wg.Go(func() {
			_, _ = s.Renew(func(c Credentials) (Credentials, error) {
				if c.RefreshToken != "r0" {
					return c, nil // already renewed
				}
				mu.Lock()
				refreshed++
				mu.Unlock()
				return Credentials{Token: "t1", RefreshToken: "r1"}, nil
			})
		})
	}
	wg.Wait()
	if refreshed != 1 || s.Token() != "t1" {
		t.Fatalf("refreshed %d times, token %q", refreshed, s.Token())
	}
	if _, err := s.Renew(func(c Credentials) (Credentials, error) { return c, errors.New("refused") }); err == nil || s.Token() != "t1" {
		t.Fatal("a failed renewal must keep the credentials and report the error")
	}
}

// TestAliveDoesNotMarkUsed checks that looking at a session, as an open
// event stream does every few seconds, does not keep it from its idle expiry.
func TestAliveDoesNotMarkUsed(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := NewStore(10*time.Minute, time.Hour)
	st.Now = func() time.Time { return now }
	s, _ := st.Create("alice", nil, "secret")
	for range 5 {
		now = now.Add(2 * time.Minute)
		if !st.Alive(s.ID) {
			t.Fatalf("session reported gone at %s", now)
		}
	}
	now = now.Add(time.Minute) // 11 minutes without use
	if st.Alive(s.ID) {
		t.Fatal("a session looked at but not used outlived its idle expiry")
	}
	if st.Len() != 0 {
		t.Fatal("the expired session was kept")
	}
	if st.Alive("unknown") {
		t.Fatal("an unknown id is alive")
	}
}
