package drbdsim_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/siterecovery/siterecovery/internal/drbd"
	drbdsim "github.com/siterecovery/siterecovery/test/sim/drbd"
)

// TestTLSOnlyWhereDRBDSupportsIt: the simulated node answers "drbdadm
// --version" and "drbdsetup help new-peer" for its drbd-utils and module
// versions, as the agent reads them; a resource file with "tls yes" comes
// up only with drbd-utils >= 9.26.0 and module >= 9.2.6, and is refused
// otherwise, by drbdadm's parser or by the module. Without TLS every
// version brings the same file up.
func TestTLSOnlyWhereDRBDSupportsIt(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, utils, kernel string
		refusal             string // "" when TLS comes up
	}{
		{"defaults are Debian's 9.22", "", "", "but got 'tls'"},
		{"old utils", "9.25.0", "9.2.12", "but got 'tls'"},
		{"old module", "9.28.0", "9.2.5", "does not know the tls net option"},
		{"both recent", "9.26.0", "9.2.6", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ex := drbdsim.Executor{StateDir: filepath.Join(dir, "state"), Node: "site-a", UtilsVersion: tc.utils, KernelVersion: tc.kernel}
			support, err := (&drbd.Adm{Exec: ex}).TLSSupport(ctx)
			require.NoError(t, err)
			assert.Equal(t, tc.refusal == "", support.OK(), "%+v", support)

			for _, tls := range []bool{false, true} {
				rc := drbd.ResourceConfig{Name: "r-tls", Protocol: "A",
					Nodes: []drbd.NodeConfig{{Hostname: "site-a", NodeID: 0, Address: "10.0.0.1", Port: 7000},
						{Hostname: "site-b", NodeID: 1, Address: "10.0.0.2", Port: 7000}},
					Volumes: []drbd.VolumeConfig{{Number: 0, Minor: 1000, Disk: "/dev/vg0/disk"}}}
				if tls {
					rc.Name, rc.TLS = "r-tls-on", &drbd.TLS{}
				}
				data, err := rc.Render()
				require.NoError(t, err)
				_, err = drbd.ReplaceDerivedFile(dir, rc.Name+".res", data)
				require.NoError(t, err)
				cfg := filepath.Join(dir, rc.Name+".conf")
				require.NoError(t, os.WriteFile(cfg, []byte(`include "`+filepath.Join(dir, rc.Name+".res")+`";`+"\n"), 0o600))
				a := &drbd.Adm{Exec: ex, ConfigFile: cfg}
				if err = a.CreateMD(ctx, rc.Name, 0); err == nil {
					err = a.Up(ctx, rc.Name)
				}
				if !tls || tc.refusal == "" {
					require.NoError(t, err, "tls=%v", tls)
					continue
				}
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.refusal)
			}
		})
	}
}
