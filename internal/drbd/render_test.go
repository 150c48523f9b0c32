package drbd

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/*.res golden files")

func sampleConfig() ResourceConfig {
	return ResourceConfig{
		Name:     "vm-disk-1",
		Protocol: "A",
		Quorum:   QuorumOptions{Quorum: "majority", OnNoQuorum: "io-error"},
		Nodes: []NodeConfig{ // deliberately unsorted: output must be sorted
			{Hostname: "dr-site-b", NodeID: 1, Address: "10.20.0.1", Port: 7000},
			{Hostname: "prod-site-a", NodeID: 0, Address: "10.10.0.1", Port: 7000},
		},
		Volumes: []VolumeConfig{
			{Number: 1, Minor: 1001, Disk: "/dev/vg0/vm-disk-1-data"},
			{Number: 0, Minor: 1000, Disk: "/dev/vg0/vm-disk-1-root", MetaDisk: "internal"},
		},
	}
}

func TestRenderGolden(t *testing.T) {
	ipv6 := sampleConfig()
	ipv6.Name, ipv6.Protocol = "vm-disk-6", "C"
	ipv6.Quorum = QuorumOptions{Quorum: "off"}
	ipv6.Nodes[0].Address, ipv6.Nodes[1].Address = "fd00:20::1", "fd00:10::1"
	ipv6.Volumes = ipv6.Volumes[1:]

	for name, cfg := range map[string]ResourceConfig{"render_protocol_a.res": sampleConfig(), "render_ipv6.res": ipv6} {
		t.Run(name, func(t *testing.T) {
			got, err := cfg.Render()
			require.NoError(t, err)
			path := filepath.Join("testdata", name)
			if *updateGolden {
				require.NoError(t, os.WriteFile(path, got, 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, string(want), string(got))
			again, _ := cfg.Render()
			assert.Equal(t, got, again, "deterministic")
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(c *ResourceConfig)
		want   string // substring of the error; "" = valid
	}{
		{"valid", func(c *ResourceConfig) {}, ""},
		{"port too low", func(c *ResourceConfig) { c.Nodes[0].Port = 6999 }, "port 6999 outside 7000-7999"},
		{"port too high", func(c *ResourceConfig) { c.Nodes[1].Port = 8000 }, "port 8000"},
		{"duplicate node id", func(c *ResourceConfig) { c.Nodes[1].NodeID = 1 }, "duplicate node-id 1"},
		{"node id range", func(c *ResourceConfig) { c.Nodes[0].NodeID = 32 }, "node-id 32 out of range"},
		{"no volumes", func(c *ResourceConfig) { c.Volumes = nil }, "at least one volume"},
		{"duplicate volume", func(c *ResourceConfig) { c.Volumes[1].Number = 1 }, "duplicate volume number"},
		{"duplicate minor", func(c *ResourceConfig) { c.Volumes[1].Minor = 1001 }, "duplicate minor 1001"},
		{"bad name", func(c *ResourceConfig) { c.Name = "vm disk" }, "invalid character"},
		{"name starts with dash", func(c *ResourceConfig) { c.Name = "-x" }, "must start with"},
		{"empty name", func(c *ResourceConfig) { c.Name = "" }, "resource name: empty"},
		{"long name", func(c *ResourceConfig) { c.Name = strings.Repeat("a", 64) }, "longer than 63"},
		{"one node", func(c *ResourceConfig) { c.Nodes = c.Nodes[:1] }, "at least 2 nodes"},
		{"one node, every peer fenced", func(c *ResourceConfig) { c.Nodes, c.Standalone = c.Nodes[:1], true }, ""},
		{"protocol B", func(c *ResourceConfig) { c.Protocol = "B" }, "must be A or C"},
		{"bad address", func(c *ResourceConfig) { c.Nodes[0].Address = "example.com" }, "not an IPv4/IPv6 literal"},
		{"mixed families", func(c *ResourceConfig) { c.Nodes[0].Address = "fd00::1" }, "address family"},
		{"bad quorum", func(c *ResourceConfig) { c.Quorum.Quorum = "all" }, "must be majority or off"},
		{"bad on-no-quorum", func(c *ResourceConfig) { c.Quorum.OnNoQuorum = "freeze" }, "io-error or suspend-io"},
		{"disk not in /dev", func(c *ResourceConfig) { c.Volumes[0].Disk = "disk.img" }, "must be a /dev/ path"},
		{"meta-disk not in /dev", func(c *ResourceConfig) { c.Volumes[0].MetaDisk = "meta.img" }, "internal or a /dev/ path"},
		{"meta-disk is the disk", func(c *ResourceConfig) { c.Volumes[0].MetaDisk = c.Volumes[0].Disk }, "the data disk itself"},
		{"bad hostname", func(c *ResourceConfig) { c.Nodes[0].Hostname = "a;b" }, "hostname"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := sampleConfig()
			tt.mutate(&c)
			err := c.Validate()
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			_, rerr := c.Render()
			assert.Error(t, rerr, "Render must refuse invalid configs")
		})
	}
}

// TestRenderAcceptedByDrbdadm feeds the output to the real drbdadm
// parser. `drbdadm -c FILE dump RES` parses and post-processes the whole
// configuration without touching the kernel module, and `--dry-run up`
// additionally shows the drbdsetup commands it would run.
func TestRenderAcceptedByDrbdadm(t *testing.T) {
	drbdadm, err := exec.LookPath("drbdadm")
	if err != nil {
		t.Skip("drbdadm not on PATH; install drbd-utils to validate rendered resource files")
	}
	host, err := os.Hostname()
	require.NoError(t, err)
	host, _, _ = strings.Cut(host, ".") // drbdadm matches `uname -n`
	cfg := sampleConfig()
	cfg.Nodes[1].Hostname = host
	cfg.Volumes[0].MetaDisk = "/dev/siterecovery-meta-0" // flex-external: the data disk stays whole
	data, err := cfg.Render()
	require.NoError(t, err)

	dir := t.TempDir()
	changed, err := WriteFileAtomic(dir, cfg.Name+".res", data)
	require.NoError(t, err)
	require.True(t, changed)
	top := filepath.Join(dir, "drbd.conf")
	require.NoError(t, os.WriteFile(top, []byte(`include "`+dir+`/*.res";`+"\n"), 0o644))

	out, err := exec.Command(drbdadm, "-c", top, "dump", cfg.Name).CombinedOutput()
	require.NoError(t, err, "drbdadm dump: %s", out)
	for _, want := range []string{"protocol           A;", "quorum           majority;", "on-no-quorum     io-error;",
		"device           minor 1001;", "address          ipv4 10.20.0.1:7000;", "hosts " + host + " dr-site-b;"} {
		assert.Contains(t, string(out), want)
	}
	out, err = exec.Command(drbdadm, "-c", top, "--dry-run", "up", cfg.Name).CombinedOutput()
	require.NoError(t, err, "drbdadm --dry-run up: %s", out)
	assert.Contains(t, string(out), "drbdsetup new-resource "+cfg.Name)
	assert.Contains(t, string(out), "--protocol=A")
	assert.Contains(t, string(out), "--sndbuf-size=4194304", "protocol A's send buffer, the bound on what a crash loses, reaches the kernel")
	assert.Regexp(t, `drbdsetup attach \S+ \S+ /dev/siterecovery-meta-0 flexible`, string(out),
		"drbdadm attaches the external metadata device as flex-external")
}

func TestWriteFileAtomic(t *testing.T) {
	for name, write := range map[string]func(dir, name string, data []byte) (bool, error){
		"durable": WriteFileAtomic, "derived": ReplaceDerivedFile,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			changed, err := write(dir, "r.res", []byte("a"))
			require.NoError(t, err)
			assert.True(t, changed)
			changed, err = write(dir, "r.res", []byte("a"))
			require.NoError(t, err)
			assert.False(t, changed)
			changed, err = write(dir, "r.res", []byte("b"))
			require.NoError(t, err)
			assert.True(t, changed)
			got, _ := os.ReadFile(filepath.Join(dir, "r.res"))
			assert.Equal(t, "b", string(got))
			entries, _ := os.ReadDir(dir)
			assert.Len(t, entries, 1, "no temp files left behind")
			_, err = write(dir, "../escape", []byte("x"))
			assert.Error(t, err)
			_, err = write(filepath.Join(dir, "missing"), "r.res", []byte("x"))
			assert.Error(t, err)
		})
	}
}

// TestRenderStandalone: a resource whose every peer is fenced has no
// connection-mesh, so DRBD keeps no connection to the fenced peer.
func TestRenderStandalone(t *testing.T) {
	c := sampleConfig()
	c.Nodes, c.Standalone = c.Nodes[:1], true
	out, err := c.Render()
	require.NoError(t, err)
	assert.NotContains(t, string(out), "connection-mesh")
	assert.Contains(t, string(out), "on "+c.Nodes[0].Hostname+" {")
}
