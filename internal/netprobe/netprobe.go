// Package netprobe is the check a test failover's probe Job runs inside the
// target cluster: can a client reach a test VM through its Service, by TCP
// connect or by an HTTP GET that answers 2xx or 3xx. It replaces a shell
// one-liner in a general-purpose image, so that the probe image carries one
// static binary, names a numeric non-root user, and runs under PodSecurity
// "restricted" without a fixed UID.
package netprobe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// TCP connects to address (host:port) and closes the connection.
func TCP(ctx context.Context, address string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", address)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", address, err)
	}
	return c.Close()
}

// HTTP gets url without following redirects and succeeds on a 2xx or 3xx
// answer, as `wget -q -O /dev/null` did for 2xx (busybox wget follows
// redirects; a redirect is an answer of the application, which is what the
// probe asks about).
func HTTP(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return fmt.Errorf("probe URL %q: %w", url, err)
	}
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return fmt.Errorf("GET %s answered %s", url, resp.Status)
	}
	return nil
}

// Run checks target with kind ("tcp": host:port; "http": a URL) within timeout.
func Run(kind, target string, timeout time.Duration) error {
	if timeout <= 0 {
		return errors.New("the timeout must be positive")
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	switch kind {
	case "tcp":
		return TCP(ctx, target)
	case "http":
		return HTTP(ctx, target)
	default:
		return fmt.Errorf("probe kind %q is neither tcp nor http", kind)
	}
}
