// Package session keeps the console's signed-in users on the server side. A
// browser holds only an opaque, random session id in its cookie; the bearer
// token that id stands for stays in this process's memory, is never written
// out, and is forgotten at logout or when the session expires (idle or
// absolute), whichever comes first.
package session

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"sync"
	"time"
)

// Session is one signed-in user.
type Session struct {
	// ID is the opaque value of the session cookie.
	ID string
	// User and Groups are what the API server said the token authenticates as.
	User   string
	Groups []string
	// CSRF must accompany every mutating request of this session.
	CSRF string
	// Created and LastSeen drive the absolute and idle expiry.
	Created, LastSeen time.Time

	renewMu sync.Mutex // serialises Renew
	credMu  sync.Mutex // guards creds
	creds   Credentials
}

// Credentials are what a session acts with. They never leave the process.
type Credentials struct {
	// Token is the bearer token sent to the API server.
	Token string
	// RefreshToken, with an OIDC sign-in, obtains a new ID token before
	// Expiry; empty for a pasted token.
	RefreshToken string
	// Expiry is when Token stops being accepted; zero when unknown.
	Expiry time.Time
}

// Token is the bearer token the session acts with. Only the code that builds
// the user's API client calls it.
func (s *Session) Token() string { return s.Credentials().Token }

// Credentials returns the session's current credentials.
func (s *Session) Credentials() Credentials {
	s.credMu.Lock()
	defer s.credMu.Unlock()
	return s.creds
}

// Renew replaces the session's credentials with what renew returns, one call
// at a time per session: renew sees the credentials a concurrent Renew may
// just have replaced, so it decides itself whether anything is still due.
func (s *Session) Renew(renew func(Credentials) (Credentials, error)) (Credentials, error) {
	s.renewMu.Lock()
	defer s.renewMu.Unlock()
	c, err := renew(s.Credentials())
	if err != nil {
		return Credentials{}, err
	}
	s.credMu.Lock()
	s.creds = c
	s.credMu.Unlock()
	return c, nil
}

// CSRFMatches reports, in constant time, whether v is the session's CSRF token.
func (s *Session) CSRFMatches(v string) bool {
	return v != "" && subtle.ConstantTimeCompare([]byte(v), []byte(s.CSRF)) == 1
}

// Store holds the sessions of one console process.
type Store struct {
	// Idle is how long a session lives without a request; Absolute how long it
	// lives at most.
	Idle, Absolute time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	mu       sync.Mutex
	sessions map[string]*Session
	onEnd    []func(id string)
}

// NewStore returns an empty store with the given expiries.
func NewStore(idle, absolute time.Duration) *Store {
	return &Store{Idle: idle, Absolute: absolute, sessions: map[string]*Session{}}
}

func (st *Store) now() time.Time {
	if st.Now != nil {
		return st.Now()
	}
	return time.Now()
}

// OnEnd registers f to run when a session ends (logout or expiry), so that
// per-session resources (API clients, watches) are released.
func (st *Store) OnEnd(f func(id string)) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.onEnd = append(st.onEnd, f)
}

// Create starts a session for a user authenticated by a bearer token.
func (st *Store) Create(user string, groups []string, token string) (*Session, error) {
	return st.CreateWith(user, groups, Credentials{Token: token})
}

// CreateWith starts a session for an authenticated user with its credentials.
func (st *Store) CreateWith(user string, groups []string, creds Credentials) (*Session, error) {
	id, err := random()
	if err != nil {
		return nil, err
	}
	csrf, err := random()
	if err != nil {
		return nil, err
	}
	now := st.now()
	s := &Session{ID: id, User: user, Groups: groups, CSRF: csrf, Created: now, LastSeen: now, creds: creds}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.sessions[id] = s
	return s, nil
}

// Get returns the live session of id and marks it used; an expired session
// is ended and reported missing.
func (st *Store) Get(id string) (*Session, bool) {
	now := st.now()
	st.mu.Lock()
	s, ok := st.sessions[id]
	if !ok {
		st.mu.Unlock()
		return nil, false
	}
	if st.expired(s, now) {
		st.mu.Unlock()
		st.Delete(id)
		return nil, false
	}
	s.LastSeen = now
	st.mu.Unlock()
	return s, true
}

// Alive reports whether the session of id is live, without marking it used:
// an open event stream checks its session this way, so that a tab left
// open still reaches the idle expiry. An expired session is ended.
func (st *Store) Alive(id string) bool {
	now := st.now()
	st.mu.Lock()
	s, ok := st.sessions[id]
	expired := ok && st.expired(s, now)
	st.mu.Unlock()
	if expired {
		st.Delete(id)
	}
	return ok && !expired
}

func (st *Store) expired(s *Session, now time.Time) bool {
	return now.Sub(s.LastSeen) > st.Idle || now.Sub(s.Created) > st.Absolute
}

// Delete ends a session (logout).
func (st *Store) Delete(id string) {
	st.mu.Lock()
	_, ok := st.sessions[id]
	delete(st.sessions, id)
	ends := st.onEnd
	st.mu.Unlock()
	if ok {
		for _, f := range ends {
			f(id)
		}
	}
}

// Sweep ends every expired session without touching the live ones; the
// server calls it periodically so that tokens of abandoned sessions do not
// stay in memory.
func (st *Store) Sweep() {
	now := st.now()
	st.mu.Lock()
	var ids []string
	for id, s := range st.sessions {
		if st.expired(s, now) {
			ids = append(ids, id)
		}
	}
	st.mu.Unlock()
	for _, id := range ids {
		st.Delete(id)
	}
}

// Len is the number of sessions held.
func (st *Store) Len() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.sessions)
}

func random() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
