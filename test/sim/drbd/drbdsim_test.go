package drbdsim_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siterecovery/siterecovery/internal/drbd"
	drbdsim "github.com/siterecovery/siterecovery/test/sim/drbd"
)

const res = "vm-disk-1"

type cluster struct {
	t             *testing.T
	adm, setup    string
	cfg, stateDir string
	fabric        *drbdsim.Fabric
}

func newCluster(t *testing.T, protocol string) *cluster {
	return newClusterWithQuorum(t, protocol, "majority")
}

// newClusterWithQuorum is newCluster with the resource's quorum policy:
// "off" is what the product gives a Primary that must keep writing alone.
func newClusterWithQuorum(t *testing.T, protocol, quorum string) *cluster {
	dir := t.TempDir()
	adm, setup := drbdsim.Build(t, dir)
	c := &cluster{t: t, adm: adm, setup: setup, stateDir: filepath.Join(dir, "state")}
	c.fabric = &drbdsim.Fabric{StateDir: c.stateDir}
	if inMemory {
		drbdsim.UseMemory(t, c.stateDir)
	}
	rc := drbd.ResourceConfig{Name: res, Protocol: protocol,
		Quorum: drbd.QuorumOptions{Quorum: quorum, OnNoQuorum: "io-error"},
		Nodes: []drbd.NodeConfig{{Hostname: "site-a", NodeID: 0, Address: "10.0.0.1", Port: 7000},
			{Hostname: "site-b", NodeID: 1, Address: "10.0.0.2", Port: 7000}},
		Volumes: []drbd.VolumeConfig{{Number: 0, Minor: 1000, Disk: "/dev/vg0/vm-disk-1"}}}
	data, err := rc.Render()
	require.NoError(t, err)
	resDir := filepath.Join(dir, "res.d")
	require.NoError(t, os.MkdirAll(resDir, 0o755))
	_, err = drbd.WriteFileAtomic(resDir, res+".res", data)
	require.NoError(t, err)
	c.cfg = filepath.Join(dir, "drbd.conf")
	require.NoError(t, os.WriteFile(c.cfg, []byte(`include "res.d/*.res";`+"\n"), 0o644))
	require.NoError(t, c.fabric.SetVolumeSize(100*1024))
	return c
}

func (c *cluster) adm4(node string) *drbd.Adm {
	var ex drbd.Executor = nodeExec{node: node, stateDir: c.stateDir}
	if inMemory {
		ex = drbdsim.Executor{StateDir: c.stateDir, Node: node}
	}
	return &drbd.Adm{Exec: ex, DrbdadmPath: c.adm, DrbdsetupPath: c.setup, ConfigFile: c.cfg}
}

// inMemory makes newCluster keep the world in memory and run the simulator in
// this process (TestScenariosInMemory).
var inMemory bool

// TestScenariosInMemory runs the scenarios again with the world in memory, as
// the test zones run it: both modes must simulate the same DRBD.
func TestScenariosInMemory(t *testing.T) {
	for name, scenario := range map[string]func(*testing.T){
		"UpNeedsCreateMD":                 TestUpNeedsCreateMD,
		"InitialSyncAndPromotionRules":    TestInitialSyncAndPromotionRules,
		"DisconnectLosesQuorumAndResyncs": TestDisconnectLosesQuorumAndResyncs,
		"ProtocolALagThenDrain":           TestProtocolALagThenDrain,
		"CutLinksHoldsForNewResources":    TestCutLinksHoldsForNewResources,
		"StatusJSONParsesInEveryState":    TestStatusJSONParsesInEveryState,
	} {
		t.Run(name, func(t *testing.T) {
			inMemory = true
			defer func() { inMemory = false }()
			scenario(t)
			// newCluster's state dir is a sibling of any later TempDir of the test.
			files, err := filepath.Glob(filepath.Join(filepath.Dir(t.TempDir()), "*", "state", "*"))
			require.NoError(t, err)
			require.Empty(t, files, "an in-memory world wrote to its state dir")
		})
	}
}

// nodeExec runs the simulator as a given node.
type nodeExec struct{ node, stateDir string }

func (e nodeExec) env() []string {
	return append(os.Environ(), "DRBDSIM_NODE="+e.node, "DRBDSIM_STATE_DIR="+e.stateDir)
}

func (e nodeExec) Run(ctx context.Context, bin string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = e.env()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, &drbd.ExitError{Cmd: bin, Stderr: strings.TrimSpace(stderr.String()), Err: err}
	}
	return out, nil
}

func (e nodeExec) Start(ctx context.Context, bin string, args ...string) (io.ReadCloser, func() error, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = e.env()
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	return out, cmd.Wait, nil
}

func (c *cluster) bringUp(nodes ...string) {
	ctx := context.Background()
	for _, n := range nodes {
		a := c.adm4(n)
		require.NoError(c.t, a.CreateMD(ctx, res, 0))
		require.NoError(c.t, a.Up(ctx, res))
	}
}

// primaryInSync brings up site-a and site-b, makes site-a's data the truth and
// Primary, and waits until site-b is UpToDate.
func (c *cluster) primaryInSync() {
	c.bringUp("site-a", "site-b")
	require.NoError(c.t, c.fabric.MarkUpToDate(res, "site-a"))
	require.NoError(c.t, c.adm4("site-a").Primary(context.Background(), res, false))
	c.waitFor("site-b", "initial sync", func(r drbd.ResourceStatus) bool { return r.Devices[0].DiskState == "UpToDate" })
}

func (c *cluster) status(node string) drbd.ResourceStatus {
	st, err := c.adm4(node).Status(context.Background(), res)
	require.NoError(c.t, err)
	require.Len(c.t, st, 1)
	return st[0]
}

func (c *cluster) waitFor(node, what string, cond func(drbd.ResourceStatus) bool) drbd.ResourceStatus {
	var last drbd.ResourceStatus
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		last = c.status(node)
		if cond(last) {
			return last
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatalf("timed out waiting for %s on %s; last state %+v", what, node, last)
	return last
}

func peerPD(r drbd.ResourceStatus) drbd.PeerDeviceStatus {
	for _, c := range r.Connections {
		return c.PeerDevices[0]
	}
	return drbd.PeerDeviceStatus{}
}

// TestPeerLeftOutOfTheFileStaysDisconnected: a node whose resource file no
// longer names its peer (the agent's spec.fencedPeers) drops the connection
// at adjust and does not connect again, also when the world is kept in files
// between commands, as separate agent processes keep it.
func TestPeerLeftOutOfTheFileStaysDisconnected(t *testing.T) {
	c := newCluster(t, "C")
	c.primaryInSync()
	alone := drbd.ResourceConfig{Name: res, Protocol: "C", Standalone: true,
		Nodes:   []drbd.NodeConfig{{Hostname: "site-a", NodeID: 0, Address: "10.0.0.1", Port: 7000}},
		Volumes: []drbd.VolumeConfig{{Number: 0, Minor: 1000, Disk: "/dev/vg0/vm-disk-1"}}}
	data, err := alone.Render()
	require.NoError(t, err)
	dir := t.TempDir()
	_, err = drbd.WriteFileAtomic(dir, res+".res", data)
	require.NoError(t, err)
	cfg := filepath.Join(dir, "drbd.conf")
	require.NoError(t, os.WriteFile(cfg, []byte(`include "`+dir+`/*.res";`+"\n"), 0o644))
	a := c.adm4("site-a")
	a.ConfigFile = cfg
	require.NoError(t, a.Adjust(context.Background(), res))
	for range 3 { // later commands read the world back
		st := c.status("site-b")
		for _, conn := range st.Connections {
			require.NotEqual(t, "Connected", conn.ConnectionState, "site-a left site-b out of its file")
		}
	}
}
