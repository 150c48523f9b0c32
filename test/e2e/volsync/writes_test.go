package volsync_test

import (
	"net/http"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
)

// writeCounter counts the writes (every request but GET) a client sends to
// an API server, by verb and resource, so that a benchmark can say how many
// object writes one cycle costs.
type writeCounter struct {
	mu    sync.Mutex
	total int
	by    map[string]int
}

// wrap returns cfg with its transport counting into w.
func (w *writeCounter) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt: rt, w: w} })
	return cfg
}

type countingTransport struct {
	rt http.RoundTripper
	w  *writeCounter
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet {
		t.w.add(req.Method + " " + resourceOf(req.URL.Path))
	}
	return t.rt.RoundTrip(req)
}

// resourceOf is the resource (and subresource) a request path names:
// /apis/g/v/namespaces/ns/kind/name/status -> kind/status.
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i+1 < len(parts); i++ {
		if parts[i] == "namespaces" && i+2 < len(parts) {
			parts = parts[i+2:]
			break
		}
	}
	if len(parts) > 0 && (parts[0] == "api" || parts[0] == "apis") {
		return path
	}
	out := parts[0]
	if len(parts) > 2 {
		out += "/" + parts[2]
	}
	return out
}

func (w *writeCounter) add(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.by == nil {
		w.by = map[string]int{}
	}
	w.total++
	w.by[key]++
}

// snapshot is the counts so far.
func (w *writeCounter) snapshot() (int, map[string]int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	by := make(map[string]int, len(w.by))
	for k, v := range w.by {
		by[k] = v
	}
	return w.total, by
}
