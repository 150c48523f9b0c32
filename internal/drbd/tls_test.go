package drbd

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTLSRendered: TLS renders DRBD's boolean net option and the key
// descriptions that are set, quoted; values drbdadm would misread, and a
// private key without its certificate, are refused.
func TestTLSRendered(t *testing.T) {
	cfg := sampleConfig()
	cfg.TLS = &TLS{}
	data, err := cfg.Render()
	require.NoError(t, err)
	assert.Contains(t, string(data), "        sndbuf-size "+strconv.Itoa(ProtocolASendBuffer)+";\n        tls yes;\n    }\n")
	cfg.TLS = &TLS{Keyring: "drbd", PrivKey: "drbd:key", Certificate: "drbd:cert"}
	data, err = cfg.Render()
	require.NoError(t, err)
	assert.Contains(t, string(data), "        tls yes;\n        tls-keyring \"drbd\";\n        tls-privkey \"drbd:key\";\n        tls-certificate \"drbd:cert\";\n")
	for name, bad := range map[string]TLS{
		"quote":               {Keyring: `a"b`},
		"space":               {Keyring: "a b"},
		"key without cert":    {PrivKey: "k"},
		"leading punctuation": {Keyring: "-x"},
	} {
		cfg.TLS = &bad
		_, err := cfg.Render()
		assert.Error(t, err, name)
	}
}

// TestTLSWithRealDrbdUtils runs the node's real drbd-utils: TLSSupport reads
// their versions, and drbdadm parses the rendered file exactly when they are
// recent enough. Debian's drbd-utils 9.22 (this machine's and the agent
// image's) lacks the option and refuses the file: that refusal is why the
// agent checks the versions before it writes a TLS file.
func TestTLSWithRealDrbdUtils(t *testing.T) {
	drbdadm, err := exec.LookPath("drbdadm")
	if err != nil {
		t.Skip("drbdadm not on PATH; install drbd-utils to run the real parser")
	}
	support, err := (&Adm{}).TLSSupport(context.Background())
	require.NoError(t, err)
	t.Logf("drbd-utils %s, kernel module %s, drbdsetup lists tls: %v", support.Utils, support.Kernel, support.SetupHasTLS)

	host, err := os.Hostname()
	require.NoError(t, err)
	host, _, _ = strings.Cut(host, ".")
	cfg := sampleConfig()
	cfg.Nodes[1].Hostname = host
	cfg.TLS = &TLS{Keyring: "drbd"}
	data, err := cfg.Render()
	require.NoError(t, err)
	dir := t.TempDir()
	_, err = ReplaceDerivedFile(dir, cfg.Name+".res", data)
	require.NoError(t, err)
	top := filepath.Join(dir, "drbd.conf")
	require.NoError(t, os.WriteFile(top, []byte(`include "`+dir+`/*.res";`+"\n"), 0o600))
	out, err := exec.Command(drbdadm, "-c", top, "dump", cfg.Name).CombinedOutput()

	if support.Utils.Less(MinTLSUtils) {
		require.Error(t, err, "drbd-utils %s parsed a tls option: %s", support.Utils, out)
		assert.Contains(t, string(out), "but got 'tls'")
		assert.False(t, support.SetupHasTLS)
		assert.False(t, support.OK())
		assert.Contains(t, support.Missing(), "drbd-utils "+support.Utils.String()+" (need >= 9.26.0)")
		return
	}
	require.NoError(t, err, "drbdadm dump: %s", out)
	assert.Regexp(t, `tls\s+yes;`, string(out))
	assert.True(t, support.SetupHasTLS)
}

// TestTLSSupportMissing: the operator's text names each part that is too old.
func TestTLSSupportMissing(t *testing.T) {
	assert.Equal(t, "no DRBD kernel module is loaded (need >= 9.2.6), drbd-utils 9.22.0 (need >= 9.26.0)",
		TLSSupport{Utils: Version{9, 22, 0}}.Missing())
	assert.Equal(t, "DRBD kernel module 9.2.5 (need >= 9.2.6)",
		TLSSupport{Kernel: Version{9, 2, 5}, Utils: Version{9, 28, 0}, SetupHasTLS: true}.Missing())
	ok := TLSSupport{Kernel: Version{9, 2, 6}, Utils: Version{9, 26, 0}, SetupHasTLS: true}
	assert.True(t, ok.OK())
	assert.Empty(t, ok.Missing())
	assert.Equal(t, Version{9, 22, 0}, versionFromCode(0x091600))
}
