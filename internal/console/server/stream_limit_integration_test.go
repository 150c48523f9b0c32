package server_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"

	"github.com/siterecovery/siterecovery/internal/console/server"
)

// streamTimeout bounds the waits for the API server to see watches start
// and stop.
const streamTimeout = 30 * time.Second

// watches is how many watches of ProtectionGroups the API server is serving
// now, from its own apiserver_longrunning_requests gauge; -1 when it cannot
// be read (it is polled from require.Eventually's goroutine, which must not
// stop the test).
func (q *quorum) watches(t *testing.T) int {
	t.Helper()
	cs, err := kubernetes.NewForConfig(q.cluster.Config)
	if err != nil {
		t.Log(err)
		return -1
	}
	body, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Log(err)
		return -1
	}
	n := 0
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_longrunning_requests{") ||
			!strings.Contains(line, `resource="protectiongroups"`) || !strings.Contains(line, `verb="WATCH"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
		if err != nil {
			t.Log(line, err)
			return -1
		}
		n += int(v)
	}
	return n
}

// openStream asks for /api/events, closes what it got, and returns the status
// and, for a refusal, the body (-1 when the request failed: it is also polled
// from require.Eventually's goroutine).
func (b *browser) openStream(t *testing.T) (int, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.base+"/api/events", http.NoBody)
	if err != nil {
		t.Log(err)
		return -1, ""
	}
	resp, err := (&http.Client{Jar: b.hc.Jar}).Do(req)
	if err != nil {
		t.Log(err)
		return -1, ""
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, ""
	}
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestEventStreamsPerSession opens event streams as a page in many tabs (or a
// script replaying the session cookie) would: past the bound the session is
// refused, each refused stream starts no watch, and a closed stream stops its
// watches on the API server and frees its place.
func TestEventStreamsPerSession(t *testing.T) {
	q := startQuorum(t, server.Options{LoginAttempts: 1000, MaxStreamsPerSession: 2})
	b := q.browser()
	require.Equal(t, http.StatusOK, b.login(q.tokens["viewer"]).code)
	require.Equal(t, 0, q.watches(t))

	first := b.stream(t)
	b.stream(t)
	// One watch per kind and DR namespace per stream: two of ProtectionGroups.
	require.Eventually(t, func() bool { return q.watches(t) == 2 }, streamTimeout, 100*time.Millisecond)

	code, body := b.openStream(t)
	assert.Equal(t, http.StatusTooManyRequests, code)
	assert.Contains(t, body, "this session already follows live updates in 2 tabs")
	assert.Equal(t, 2, q.watches(t), "a refused stream starts no watch")

	other := q.browser()
	require.Equal(t, http.StatusOK, other.login(q.tokens["viewer"]).code)
	other.stream(t)
	require.Eventually(t, func() bool { return q.watches(t) == 3 }, streamTimeout, 100*time.Millisecond,
		"the bound is per session: another session of the same user streams")

	first.cancel() // the tab is closed
	require.Eventually(t, func() bool { return q.watches(t) == 2 }, streamTimeout, 100*time.Millisecond,
		"a closed stream stops its watches")
	require.Eventually(t, func() bool {
		code, _ := b.openStream(t)
		return code == http.StatusOK
	}, streamTimeout, 200*time.Millisecond, "a closed stream frees its place")
}
