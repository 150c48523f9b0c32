package drbd

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testSecret = "q3Zx9vR2Lk7Wm4Tn8Hc1Pd6Yf0Ga5Jb" // base64-like, 32 characters

// TestPeerAuthAcceptedByDrbdadm: the real drbdadm parses a resource file with
// cram-hmac-alg and shared-secret and hands both to the kernel when it
// creates the peer (drbdsetup new-peer), and the file is readable by its
// owner only.
func TestPeerAuthAcceptedByDrbdadm(t *testing.T) {
	drbdadm, err := exec.LookPath("drbdadm")
	if err != nil {
		t.Skip("drbdadm not on PATH; install drbd-utils to validate rendered resource files")
	}
	host, err := os.Hostname()
	require.NoError(t, err)
	host, _, _ = strings.Cut(host, ".")
	cfg := sampleConfig()
	cfg.Nodes[1].Hostname = host
	cfg.PeerAuth = &PeerAuth{Alg: "sha256", Secret: testSecret}
	data, err := cfg.Render()
	require.NoError(t, err)
	assert.Contains(t, string(data), "        cram-hmac-alg sha256;\n        shared-secret \""+testSecret+"\";\n")

	dir := t.TempDir()
	_, err = ReplaceDerivedFile(dir, cfg.Name+".res", data)
	require.NoError(t, err)
	fi, err := os.Stat(filepath.Join(dir, cfg.Name+".res"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the file holds the shared secret")
	top := filepath.Join(dir, "drbd.conf")
	require.NoError(t, os.WriteFile(top, []byte(`include "`+dir+`/*.res";`+"\n"), 0o600))

	out, err := exec.Command(drbdadm, "-c", top, "dump", cfg.Name).CombinedOutput()
	require.NoError(t, err, "drbdadm dump: %s", out)
	assert.Regexp(t, `cram-hmac-alg\s+sha256;`, string(out))
	assert.Regexp(t, `shared-secret\s+"?`+testSecret+`"?;`, string(out))
	out, err = exec.Command(drbdadm, "-c", top, "--dry-run", "up", cfg.Name).CombinedOutput()
	require.NoError(t, err, "drbdadm --dry-run up: %s", out)
	assert.Regexp(t, `drbdsetup new-peer \S+ \d+ .*--shared-secret=`+testSecret+` --cram-hmac-alg=sha256`, string(out))
}

// TestPeerAuthRefusedValues: what the kernel would cut or drbdadm would
// misread is refused, and the error never quotes the secret.
func TestPeerAuthRefusedValues(t *testing.T) {
	for name, pa := range map[string]PeerAuth{
		"unknown algorithm": {Alg: "md5", Secret: testSecret},
		"too short":         {Alg: "sha256", Secret: "short-secret"},
		"too long":          {Alg: "sha256", Secret: strings.Repeat("a", 64)},
		"quote":             {Alg: "sha256", Secret: testSecret + `"x`},
		"space":             {Alg: "sha512", Secret: testSecret + " x"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := sampleConfig()
			cfg.PeerAuth = &pa
			_, err := cfg.Render()
			require.Error(t, err)
			assert.NotContains(t, err.Error(), pa.Secret)
			assert.NotContains(t, err.Error(), testSecret)
		})
	}
}

// TestPeerAuthNeverFormatted: formatting a config never prints the secret.
func TestPeerAuthNeverFormatted(t *testing.T) {
	cfg := sampleConfig()
	cfg.PeerAuth = &PeerAuth{Alg: "sha256", Secret: testSecret}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		for _, v := range []any{*cfg.PeerAuth, cfg.PeerAuth} {
			s := fmt.Sprintf(verb, v)
			assert.NotContains(t, s, testSecret, verb)
			assert.Contains(t, s, "sha256", verb)
		}
	}
}

// TestExitErrorRedactsSecret runs a command that fails the way drbdadm does
// when a drbdsetup call it makes fails: the command line carries the
// secret as an argument, and stderr repeats it. The error, which the agent
// turns into conditions, events and logs, holds neither.
func TestExitErrorRedactsSecret(t *testing.T) {
	script := `echo "Command 'drbdsetup new-peer r0 1 --_name=peer --shared-secret=$S --cram-hmac-alg=sha256' terminated with exit code 10" >&2
echo 'r0.res:4: shared-secret "'"$S"'"; bad' >&2
exit 10`
	_, err := OSExecutor{Env: []string{"S=" + testSecret}}.Run(context.Background(), "sh", "-c", script, "drbdadm", "--shared-secret="+testSecret)
	require.Error(t, err)
	msg := err.Error()
	assert.NotContains(t, msg, testSecret)
	assert.Contains(t, msg, "--shared-secret=<redacted>")
	assert.Contains(t, msg, `shared-secret <redacted>`)
	assert.Contains(t, msg, "terminated with exit code 10", "the rest of the message stays")
}
