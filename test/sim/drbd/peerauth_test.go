package drbdsim_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siterecovery/siterecovery/internal/drbd"
)

// useSecret gives node a resource file of its own, with peer authentication
// by secret ("" for none), as its agent renders it, and returns its Adm.
func (c *cluster) useSecret(node, secret string) *drbd.Adm {
	rc := drbd.ResourceConfig{Name: res, Protocol: "C",
		Quorum: drbd.QuorumOptions{Quorum: "majority", OnNoQuorum: "io-error"},
		Nodes: []drbd.NodeConfig{{Hostname: "site-a", NodeID: 0, Address: "10.0.0.1", Port: 7000},
			{Hostname: "site-b", NodeID: 1, Address: "10.0.0.2", Port: 7000}},
		Volumes: []drbd.VolumeConfig{{Number: 0, Minor: 1000, Disk: "/dev/vg0/vm-disk-1"}}}
	if secret != "" {
		rc.PeerAuth = &drbd.PeerAuth{Alg: "sha256", Secret: secret}
	}
	data, err := rc.Render()
	require.NoError(c.t, err)
	dir := filepath.Join(filepath.Dir(c.cfg), "node-"+node)
	require.NoError(c.t, os.MkdirAll(dir, 0o755))
	_, err = drbd.ReplaceDerivedFile(dir, res+".res", data)
	require.NoError(c.t, err)
	cfg := filepath.Join(dir, "drbd.conf")
	require.NoError(c.t, os.WriteFile(cfg, []byte(`include "`+dir+`/*.res";`+"\n"), 0o600))
	a := c.adm4(node)
	a.ConfigFile = cfg
	return a
}

func connState(r drbd.ResourceStatus) string {
	for _, conn := range r.Connections {
		return conn.ConnectionState
	}
	return ""
}

// stays checks cond on node's status for a while: a refused connection must
// not come up by itself.
func (c *cluster) stays(node, what string, cond func(drbd.ResourceStatus) bool) {
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		st := c.status(node)
		require.True(c.t, cond(st), "%s on %s: %+v", what, node, st)
	}
}

const (
	secretOne = "c2l0ZXJlY292ZXJ5LXNlY3JldC1vbmUtMDEyMzQ1Njc"
	secretTwo = "c2l0ZXJlY292ZXJ5LXNlY3JldC10d28tMDEyMzQ1Njc"
)

// TestPeersWithDifferentSecretsDoNotConnect: two replicas whose shared
// secrets differ refuse each other (drbd_do_auth: "Authentication of peer
// failed") and stay StandAlone, a peer without authentication is refused
// too, and once both hold the same secret a connect brings the link up.
func TestPeersWithDifferentSecretsDoNotConnect(t *testing.T) {
	ctx := context.Background()
	for name, secretB := range map[string]string{"different secret": secretTwo, "no authentication": ""} {
		t.Run(name, func(t *testing.T) {
			c := newCluster(t, "C")
			c.t = t
			a, b := c.useSecret("site-a", secretOne), c.useSecret("site-b", secretB)
			for _, adm := range []*drbd.Adm{a, b} {
				require.NoError(t, adm.CreateMD(ctx, res, 0))
				require.NoError(t, adm.Up(ctx, res))
			}
			require.NoError(t, c.fabric.MarkUpToDate(res, "site-a"))
			c.waitFor("site-a", "authentication refused", func(r drbd.ResourceStatus) bool { return connState(r) == "StandAlone" })
			c.stays("site-a", "no connection", func(r drbd.ResourceStatus) bool { return connState(r) == "StandAlone" })
			c.stays("site-b", "no connection and no sync", func(r drbd.ResourceStatus) bool {
				return connState(r) != "Connected" && r.Devices[0].DiskState != "UpToDate"
			})
			// connect, as the agent does for a StandAlone connection, does not
			// connect while the secrets differ.
			require.NoError(t, a.Connect(ctx, res))
			c.stays("site-a", "refused again", func(r drbd.ResourceStatus) bool { return connState(r) != "Connected" })

			b = c.useSecret("site-b", secretOne)
			require.NoError(t, b.Adjust(ctx, res))
			require.NoError(t, a.Connect(ctx, res))
			require.NoError(t, b.Connect(ctx, res))
			c.waitFor("site-b", "connected with one secret and synced", func(r drbd.ResourceStatus) bool {
				return connState(r) == "Connected" && r.Devices[0].DiskState == "UpToDate"
			})
		})
	}
}

// TestRotationKeepsEstablishedLink: a new secret applied on one side first
// (adjust) leaves the established connection up, as DRBD authenticates only
// when a connection is made; a reconnect in between is refused until the
// other side has the new secret too.
func TestRotationKeepsEstablishedLink(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, "C")
	a, b := c.useSecret("site-a", secretOne), c.useSecret("site-b", secretOne)
	for _, adm := range []*drbd.Adm{a, b} {
		require.NoError(t, adm.CreateMD(ctx, res, 0))
		require.NoError(t, adm.Up(ctx, res))
	}
	require.NoError(t, c.fabric.MarkUpToDate(res, "site-a"))
	c.waitFor("site-b", "synced", func(r drbd.ResourceStatus) bool {
		return connState(r) == "Connected" && r.Devices[0].DiskState == "UpToDate"
	})

	a = c.useSecret("site-a", secretTwo)
	require.NoError(t, a.Adjust(ctx, res))
	c.stays("site-a", "the established link stays", func(r drbd.ResourceStatus) bool { return connState(r) == "Connected" })

	require.NoError(t, c.fabric.Disconnect(res))
	require.NoError(t, c.fabric.Connect(res))
	c.waitFor("site-a", "the reconnect refused", func(r drbd.ResourceStatus) bool { return connState(r) == "StandAlone" })

	b = c.useSecret("site-b", secretTwo)
	require.NoError(t, b.Adjust(ctx, res))
	require.NoError(t, a.Connect(ctx, res))
	require.NoError(t, b.Connect(ctx, res))
	c.waitFor("site-a", "connected on the new secret", func(r drbd.ResourceStatus) bool { return connState(r) == "Connected" })
}
