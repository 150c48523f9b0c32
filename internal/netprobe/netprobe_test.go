package netprobe

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestTCPReachesAListenerAndNotAClosedPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	if err := Run("tcp", ln.Addr().String(), 5*time.Second); err != nil {
		t.Fatalf("probe of a listening port: %v", err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	if err := Run("tcp", addr, 5*time.Second); err == nil {
		t.Fatalf("probe of the closed port %s succeeded", addr)
	}
}

func TestHTTPJudgesTheStatus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			_, _ = w.Write([]byte("fine"))
		case "/moved":
			http.Redirect(w, r, "/elsewhere-that-fails", http.StatusFound)
		default:
			http.Error(w, "down", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	for path, ok := range map[string]bool{"/ok": true, "/moved": true, "/broken": false} {
		err := Run("http", srv.URL+path, 5*time.Second)
		if ok && err != nil {
			t.Errorf("%s: %v", path, err)
		}
		if !ok && (err == nil || !strings.Contains(err.Error(), "503")) {
			t.Errorf("%s: want an error naming 503, got %v", path, err)
		}
	}
}

func TestTimeoutBoundsAProbeThatHangs(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-block }))
	defer srv.Close()
	defer close(block)
	start := time.Now()
	if err := Run("http", srv.URL, 300*time.Millisecond); err == nil {
		t.Fatal("a server that never answers passed the probe")
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the probe took %s despite its 300ms timeout", took)
	}
}

func TestBadInput(t *testing.T) {
	if err := Run("udp", "x:1", time.Second); err == nil || !strings.Contains(err.Error(), "neither tcp nor http") {
		t.Errorf("unknown kind: %v", err)
	}
	if err := Run("tcp", "x:1", 0); err == nil {
		t.Error("zero timeout accepted")
	}
}
