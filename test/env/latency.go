package env

import (
	"errors"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// LatencyProxy stands in front of one API server on loopback, between it
// and quorum-manager, and delays what passes: each chunk read from either
// side is written to the other Delay after it was read. It passes the bytes
// through unchanged, TLS included, so the client still checks the API
// server's certificate (valid for 127.0.0.1) and sends its own credentials.
// Chunks are delayed, not spaced: a large response is late by Delay once,
// as over a long link, rather than by Delay per chunk.
type LatencyProxy struct {
	ln     net.Listener
	target string
	delay  atomic.Int64
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	// cut drops every connection and every new one (Cut).
	cut bool
}

// StartLatencyProxy listens on a free loopback port and forwards every
// connection to target (host:port); it stops with the test.
func StartLatencyProxy(t testing.TB, target string) *LatencyProxy {
	t.Helper()
	p, err := NewLatencyProxy(target)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

// NewLatencyProxy is StartLatencyProxy outside a test: the caller closes it.
func NewLatencyProxy(target string) (*LatencyProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &LatencyProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *LatencyProxy) Addr() string { return p.ln.Addr().String() }

// SetDelay sets the delay of each direction from now on; 0 passes at once.
func (p *LatencyProxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// Delay is the delay of each direction.
func (p *LatencyProxy) Delay() time.Duration { return time.Duration(p.delay.Load()) }

func (p *LatencyProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

// Cut drops every connection through the proxy, and every new one until
// Cut(false): the link between quorum-manager and the API server is gone,
// while the API server keeps serving everyone else (a partition).
func (p *LatencyProxy) Cut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			_ = c.Close()
		}
	}
}

func (p *LatencyProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.cut {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *LatencyProxy) forget(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

func (p *LatencyProxy) serve(client net.Conn) {
	defer p.wg.Done()
	defer client.Close()
	// A stopped API server refuses the dial: the client sees its
	// connection drop, as it would without the proxy.
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		return
	}
	defer server.Close()
	if !p.track(client) || !p.track(server) {
		return
	}
	defer p.forget(client)
	defer p.forget(server)
	done := make(chan struct{}, 2)
	go func() { p.pipe(server, client); done <- struct{}{} }()
	go func() { p.pipe(client, server); done <- struct{}{} }()
	<-done // one side ended: end both
}

// chunk is what one read returned, and when it may be written on.
type chunk struct {
	data []byte
	at   time.Time
}

// pipe copies from src to dst, each chunk Delay after it was read.
func (p *LatencyProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	queue := make(chan chunk, 256)
	go func() {
		defer close(queue)
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				queue <- chunk{data: append([]byte(nil), buf[:n]...), at: time.Now().Add(p.Delay())}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range queue {
		if wait := time.Until(c.at); wait > 0 {
			time.Sleep(wait)
		}
		if _, err := dst.Write(c.data); err != nil {
			// Drain, so that the reader is not left blocked on a full queue.
			for range queue {
			}
			return
		}
	}
}

// Close stops the proxy and drops its connections.
func (p *LatencyProxy) Close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	if err := p.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		panic(err) // a listener of our own that will not close
	}
	p.wg.Wait()
}

// via returns cfg with its API server reached through the proxy.
func (p *LatencyProxy) via(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	u, err := url.Parse(out.Host)
	if err != nil || u.Host == "" {
		out.Host = p.Addr()
		return out
	}
	u.Host = p.Addr()
	out.Host = u.String()
	return out
}

// viaKubeconfig returns the kubeconfig with every cluster's server reached
// through the proxy.
func (p *LatencyProxy) viaKubeconfig(t testing.TB, kubeconfig []byte) []byte {
	t.Helper()
	out, err := p.ViaKubeconfig(kubeconfig)
	require.NoError(t, err)
	return out
}

// ViaKubeconfig returns the kubeconfig with every cluster's server reached
// through the proxy.
func (p *LatencyProxy) ViaKubeconfig(kubeconfig []byte) ([]byte, error) {
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, err
	}
	for _, c := range cfg.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil {
			return nil, err
		}
		u.Host = p.Addr()
		c.Server = u.String()
	}
	return clientcmd.Write(*cfg)
}

func (e *Env) startLatencyProxies(t testing.TB) {
	e.Latency = map[string]*LatencyProxy{}
	for name, c := range e.Clusters {
		u, err := url.Parse(c.Config.Host)
		require.NoError(t, err)
		e.Latency[name] = StartLatencyProxy(t, u.Host)
	}
}

// quorumKubeconfig is the kubeconfig quorum-manager reaches cluster with.
func (e *Env) quorumKubeconfig(t testing.TB, cluster string) []byte {
	if p := e.Latency[cluster]; p != nil {
		return p.viaKubeconfig(t, e.Clusters[cluster].Kubeconfig)
	}
	return e.Clusters[cluster].Kubeconfig
}

// quorumConfig is the connection quorum-manager reaches the quorum cluster with.
func (e *Env) quorumConfig() *rest.Config {
	if p := e.Latency[Quorum]; p != nil {
		return p.via(e.Clusters[Quorum].Config)
	}
	return e.Clusters[Quorum].Config
}

// Partition cuts (or restores) quorum-manager's link to cluster's API
// server, which keeps serving the cluster's own controllers: the site runs
// on, unseen. It needs Options.Latency. The DRBD links are the DRBD
// simulator's (Fabric.CutLinks).
func (e *Env) Partition(t testing.TB, cluster string, cut bool) {
	t.Helper()
	p := e.Latency[cluster]
	require.NotNil(t, p, "Partition needs env.Options.Latency")
	p.Cut(cut)
}
