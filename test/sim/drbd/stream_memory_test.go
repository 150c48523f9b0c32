package drbdsim_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siterecovery/siterecovery/internal/drbd"
	drbdsim "github.com/siterecovery/siterecovery/test/sim/drbd"
)

// An in-memory stream renders again only the resources a command changed; a
// change by the fabric (which may touch any resource) renders all. Whatever
// mix of changes, the stream's state must be the one a fresh full dump
// reports, on a node with several resources of which one changes at a time.
func TestInMemoryStreamMatchesAFullDump(t *testing.T) {
	dir := t.TempDir()
	adm, setup := drbdsim.Build(t, dir)
	stateDir := filepath.Join(dir, "state")
	drbdsim.UseMemory(t, stateDir)
	fabric := &drbdsim.Fabric{StateDir: stateDir}
	resDir := filepath.Join(dir, "res.d")
	require.NoError(t, os.MkdirAll(resDir, 0o755))
	names := []string{"vm-a", "vm-b", "vm-c"}
	for i, name := range names {
		rc := drbd.ResourceConfig{Name: name, Protocol: "C",
			Quorum: drbd.QuorumOptions{Quorum: "majority", OnNoQuorum: "io-error"},
			Nodes: []drbd.NodeConfig{{Hostname: "site-a", NodeID: 0, Address: "10.0.0.1", Port: 7000 + i},
				{Hostname: "site-b", NodeID: 1, Address: "10.0.0.2", Port: 7000 + i}},
			Volumes: []drbd.VolumeConfig{{Number: 0, Minor: 1000 + i, Disk: "/dev/vg0/" + name}}}
		data, err := rc.Render()
		require.NoError(t, err)
		_, err = drbd.WriteFileAtomic(resDir, name+".res", data)
		require.NoError(t, err)
	}
	cfg := filepath.Join(dir, "drbd.conf")
	require.NoError(t, os.WriteFile(cfg, []byte(`include "res.d/*.res";`+"\n"), 0o644))
	require.NoError(t, fabric.SetVolumeSize(1024))
	on := func(node string) *drbd.Adm {
		return &drbd.Adm{Exec: drbdsim.Executor{StateDir: stateDir, Node: node}, DrbdadmPath: adm, DrbdsetupPath: setup, ConfigFile: cfg}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	streamed := drbd.NewTracker()
	s := &drbd.Streamer{Exec: drbdsim.Executor{StateDir: stateDir, Node: "site-a"}, DrbdsetupPath: setup,
		Handle: func(ev drbd.Event) { streamed.Apply(ev) }}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()

	full := func() []drbd.ResourceStatus {
		out, err := drbdsim.Executor{StateDir: stateDir, Node: "site-a"}.Run(ctx, setup, "events2", "--now", "--statistics")
		require.NoError(t, err)
		tr := drbd.NewTracker()
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			ev, err := drbd.ParseEvent(line)
			require.NoError(t, err)
			tr.Apply(ev)
		}
		return tr.Snapshot()
	}
	matches := func(step string) {
		t.Helper()
		var want, got []drbd.ResourceStatus
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if want, got = withoutDeltas(full()), withoutDeltas(streamed.Snapshot()); len(want) > 0 && reflect.DeepEqual(want, got) {
				return
			}
		}
		t.Fatalf("after %s the stream differs from a full dump:\nstream %+v\nfull   %+v", step, got, want)
	}

	for _, node := range []string{"site-a", "site-b"} {
		for _, name := range names {
			require.NoError(t, on(node).CreateMD(ctx, name, 0))
			require.NoError(t, on(node).Up(ctx, name))
		}
	}
	matches("bringing every resource up")
	require.NoError(t, on("site-a").Primary(ctx, "vm-b", true))
	matches("promoting one resource")
	require.NoError(t, on("site-b").Down(ctx, "vm-c"))
	matches("taking a resource down on the peer")
	require.NoError(t, fabric.Disconnect("vm-a"))
	matches("cutting one resource's link (a fabric change)")
	require.NoError(t, on("site-a").Secondary(ctx, "vm-b"))
	matches("demoting it again")
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
}

// withoutDeltas drops what the tracker derives from consecutive events (the
// traffic since the last one), which a single dump cannot show.
func withoutDeltas(rs []drbd.ResourceStatus) []drbd.ResourceStatus {
	for _, r := range rs {
		for _, c := range r.Connections {
			for v, pd := range c.PeerDevices {
				pd.ReceivedDeltaKiB, pd.SentDeltaKiB = 0, 0
				c.PeerDevices[v] = pd
			}
		}
	}
	return rs
}
