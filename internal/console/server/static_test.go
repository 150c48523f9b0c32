package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"k8s.io/client-go/rest"
)

func TestStaticServesTheAppForEveryScreen(t *testing.T) {
	ui := fstest.MapFS{
		"index.html":       {Data: []byte(`<!doctype html><script type="module" src="/assets/app.js"></script>`)},
		"assets/app.js":    {Data: []byte(`console.log(1)`)},
		"assets/style.css": {Data: []byte(`body{}`)},
	}
	s := New(Options{API: &rest.Config{Host: "https://127.0.0.1:1"}, UI: ui})
	for path, want := range map[string]string{
		"/": "assets/app.js", "/groups/dr/x": "assets/app.js", "/operations": "assets/app.js", "/assets/app.js": "console.log",
	} {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, http.NoBody))
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("%s: %d %q", path, rec.Code, rec.Body.String())
		}
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
			t.Errorf("%s: CSP %q", path, csp)
		}
	}
}

func TestStaticWithoutTheFrontEndSaysHowToBuildIt(t *testing.T) {
	s := New(Options{API: &rest.Config{Host: "https://127.0.0.1:1"}})
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", http.NoBody))
	if !strings.Contains(rec.Body.String(), "make console") {
		t.Fatalf("placeholder: %q", rec.Body.String())
	}
	if strings.Contains(rec.Body.String(), "<script") {
		t.Fatal("the placeholder must run under the CSP: no script")
	}
}

func TestLagLevel(t *testing.T) {
	lag := func(n int64) *int64 { return &n }
	for _, c := range []struct {
		lag       *int64
		objective int32
		want      string
	}{
		{nil, 60, lagUnknown}, {lag(5), 0, lagUnknown}, {lag(44), 60, lagOK},
		{lag(45), 60, lagWarning}, {lag(60), 60, lagWarning}, {lag(61), 60, lagDanger},
	} {
		if got := lagLevel(c.lag, c.objective); got != c.want {
			t.Errorf("lag %v of %d: %s, want %s", c.lag, c.objective, got, c.want)
		}
	}
}
