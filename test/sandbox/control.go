package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/siterecovery/siterecovery/test/sim/guest"
)

// The control API lets tests outside the repository drive the sandbox's
// simulated guests and faults over HTTP on loopback. Its base URL is written to
// <work dir>/control-url once the demo VMs are protected.

// maxWriteBlocks bounds one write batch of the control API.
const maxWriteBlocks = 100000

// guestActions is what the control API asks of the simulated guests.
type guestActions interface {
	// Known reports whether cluster is a workload cluster of the sandbox.
	Known(cluster string) bool
	Write(ctx context.Context, cluster string, vm types.NamespacedName, blocks int) (guest.Ack, error)
	Verify(ctx context.Context, cluster string, vm types.NamespacedName) (guest.Result, error)
}

// faultActions is what the control API asks of the simulated sites.
type faultActions interface {
	// Known reports whether cluster is a workload cluster of the sandbox.
	Known(cluster string) bool
	// Links cuts (cut) or restores the DRBD links of cluster's site.
	Links(cluster string, cut bool) error
	// PowerOff cuts the power of cluster's site: its API server,
	// controllers, agent, DRBD and VMs stop.
	PowerOff(cluster string) error
	// Partition cuts cluster's site off from quorum-manager and from the
	// other site (its DRBD links); its controllers, agents and VMs run on.
	Partition(cluster string) error
	// Heal restores the links and boots what PowerOff stopped.
	Heal() error
}

type reason struct {
	Reason string `json:"reason"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, code int, format string, args ...any) {
	writeJSON(w, code, reason{Reason: fmt.Sprintf(format, args...)})
}

// decode reads a JSON body strictly into v; false after answering 400.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		fail(w, http.StatusBadRequest, "invalid JSON body: %v", err)
		return false
	}
	return true
}

// controlHandler serves the control API's routes.
func controlHandler(g guestActions, f faultActions) http.Handler {
	mux := http.NewServeMux()
	vmOf := func(w http.ResponseWriter, r *http.Request) (string, types.NamespacedName, bool) {
		cluster := r.PathValue("cluster")
		if !g.Known(cluster) {
			fail(w, http.StatusNotFound, "unknown cluster %q", cluster)
			return "", types.NamespacedName{}, false
		}
		return cluster, types.NamespacedName{Namespace: r.PathValue("namespace"), Name: r.PathValue("vm")}, true
	}
	mux.HandleFunc("POST /v1/guests/{cluster}/{namespace}/{vm}/write", func(w http.ResponseWriter, r *http.Request) {
		cluster, vm, ok := vmOf(w, r)
		if !ok {
			return
		}
		var body struct {
			Blocks int `json:"blocks"`
		}
		if !decode(w, r, &body) {
			return
		}
		if body.Blocks < 1 || body.Blocks > maxWriteBlocks {
			fail(w, http.StatusBadRequest, "blocks must be between 1 and %d, not %d", maxWriteBlocks, body.Blocks)
			return
		}
		ack, err := g.Write(r.Context(), cluster, vm, body.Blocks)
		switch {
		case err == nil:
			writeJSON(w, http.StatusOK, ack)
		case errors.Is(err, guest.ErrNotRunning), errors.Is(err, guest.ErrIO):
			fail(w, http.StatusConflict, "%v", err)
		default:
			fail(w, http.StatusServiceUnavailable, "%v", err)
		}
	})
	mux.HandleFunc("GET /v1/guests/{cluster}/{namespace}/{vm}/verify", func(w http.ResponseWriter, r *http.Request) {
		cluster, vm, ok := vmOf(w, r)
		if !ok {
			return
		}
		res, err := g.Verify(r.Context(), cluster, vm)
		if err != nil {
			fail(w, http.StatusConflict, "cannot read the disks of %s on %s: %v", vm, cluster, err)
			return
		}
		if res.Disks == nil {
			res.Disks = []guest.DiskSum{}
		}
		writeJSON(w, http.StatusOK, res)
	})
	type site struct {
		Cluster string `json:"cluster"`
		Cut     *bool  `json:"cut,omitempty"`
	}
	siteOf := func(w http.ResponseWriter, r *http.Request, needCut bool) (site, bool) {
		var s site
		if !decode(w, r, &s) {
			return s, false
		}
		if !f.Known(s.Cluster) {
			fail(w, http.StatusNotFound, "unknown cluster %q", s.Cluster)
			return s, false
		}
		if needCut && s.Cut == nil {
			fail(w, http.StatusBadRequest, `"cut" (true or false) is required`)
			return s, false
		}
		return s, true
	}
	done := func(w http.ResponseWriter, err error) {
		if err != nil {
			fail(w, http.StatusInternalServerError, "%v", err)
			return
		}
		writeJSON(w, http.StatusOK, struct{}{})
	}
	mux.HandleFunc("POST /v1/faults/links", func(w http.ResponseWriter, r *http.Request) {
		if s, ok := siteOf(w, r, true); ok {
			done(w, f.Links(s.Cluster, *s.Cut))
		}
	})
	mux.HandleFunc("POST /v1/faults/power-off", func(w http.ResponseWriter, r *http.Request) {
		if s, ok := siteOf(w, r, false); ok {
			done(w, f.PowerOff(s.Cluster))
		}
	})
	mux.HandleFunc("POST /v1/faults/partition", func(w http.ResponseWriter, r *http.Request) {
		if s, ok := siteOf(w, r, false); ok {
			done(w, f.Partition(s.Cluster))
		}
	})
	mux.HandleFunc("POST /v1/faults/heal", func(w http.ResponseWriter, _ *http.Request) {
		done(w, f.Heal())
	})
	return mux
}

// sandboxGuests plays the guests of the demo VMs on the workload clusters.
type sandboxGuests struct {
	guests   *guest.Guests
	clusters map[string]*guest.Cluster
}

func (sb *sandbox) newGuests() *sandboxGuests {
	g := &sandboxGuests{guests: guest.New(), clusters: map[string]*guest.Cluster{}}
	for _, c := range []string{primary, dr} {
		g.clusters[c] = guest.NewCluster(c, sb.zone.Clusters[c].Client, sb.fabric, sb.devices)
	}
	return g
}

func (g *sandboxGuests) Known(cluster string) bool { return g.clusters[cluster] != nil }

func (g *sandboxGuests) Write(ctx context.Context, cluster string, vm types.NamespacedName, blocks int) (guest.Ack, error) {
	return g.guests.Write(ctx, g.clusters[cluster], vm, blocks)
}

func (g *sandboxGuests) Verify(ctx context.Context, cluster string, vm types.NamespacedName) (guest.Result, error) {
	return g.guests.Verify(ctx, g.clusters[cluster], vm)
}

// sandboxFaults injects faults into the sandbox's sites and remembers which
// API servers it stopped, so that Heal restarts those and no others.
type sandboxFaults struct {
	sb      *sandbox
	mu      sync.Mutex
	stopped map[string]bool
}

func (f *sandboxFaults) Known(cluster string) bool { return cluster == primary || cluster == dr }

// Links cuts or restores every link between the two sites: with two sites,
// that is what cutting one site's links means.
func (f *sandboxFaults) Links(_ string, cut bool) error {
	if cut {
		return f.sb.fabric.CutLinks()
	}
	return f.sb.fabric.RestoreLinks()
}

// PowerOff cuts the power of a whole site: its pg-controller and agent are
// killed, its node's DRBD stops without a flush (drbdsim.Fabric.PowerOff:
// the VMs' devices go with it, so their guests' writes fail), and its API
// server stops. The peer site's DRBD sees the node vanish.
func (f *sandboxFaults) PowerOff(cluster string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.sb.siteProcesses(cluster) {
		p.Kill()
	}
	for _, n := range nodes[cluster] {
		if err := f.sb.fabric.PowerOff(n.name); err != nil {
			return err
		}
	}
	if err := f.sb.zone.Clusters[cluster].StopAPIServer(); err != nil {
		return err
	}
	f.stopped[cluster] = true
	return nil
}

func (f *sandboxFaults) Partition(cluster string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.sb.fabric.CutLinks(); err != nil {
		return err
	}
	f.sb.links[cluster].Cut(true)
	return nil
}

func (f *sandboxFaults) Heal() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.sb.fabric.RestoreLinks(); err != nil {
		return err
	}
	for _, l := range f.sb.links {
		l.Cut(false)
	}
	// A powered-off site boots: its API server, then its controllers and
	// agent, which bring its DRBD resources up again (Secondary).
	for cluster := range f.stopped {
		if err := f.sb.zone.Clusters[cluster].StartAPIServer(); err != nil {
			return err
		}
		for _, p := range f.sb.siteProcesses(cluster) {
			if err := p.Start(f.sb.logDir()); err != nil {
				return fmt.Errorf("starting %s again: %w", p.Name, err)
			}
		}
		delete(f.stopped, cluster)
	}
	return nil
}

// startControl serves the control API on a free loopback port until ctx ends
// and writes its base URL to <work dir>/control-url.
func (sb *sandbox) startControl(ctx context.Context) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listening for the control API: %w", err)
	}
	srv := &http.Server{
		Handler:           controlHandler(sb.guests, &sandboxFaults{sb: sb, stopped: map[string]bool{}}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	sb.controlURL = "http://" + ln.Addr().String()
	if err := os.WriteFile(sb.controlURLFile(), []byte(sb.controlURL+"\n"), 0o644); err != nil {
		_ = srv.Close()
		return err
	}
	return nil
}

func (sb *sandbox) controlURLFile() string { return filepath.Join(sb.o.workDir, "control-url") }
