package nodeagent

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func hostnameConfig(t *testing.T, node, host string) Config {
	return Config{NodeName: node, Hostname: host, ReplicationAddress: "10.0.0.1", ReplicationNetworks: Networks{netip.MustParsePrefix("10.0.0.0/24")},
		ResourceDir: filepath.Join(t.TempDir(), "drbd.d")}
}

// An agent whose node name is not the host name drbdadm matches `on` sections
// by refuses to start, and says which two names differ and what to set.
func TestCompleteRefusesNodeNameThatIsNotTheHostname(t *testing.T) {
	cfg := hostnameConfig(t, "worker-1.cloud.example", "ip-10-0-0-7")
	err := cfg.Complete()
	if err == nil {
		t.Fatal("Complete accepted node name worker-1.cloud.example on host ip-10-0-0-7")
	}
	for _, want := range []string{`--node-name "worker-1.cloud.example"`, `host name "ip-10-0-0-7"`, "uname -n",
		"not defined in your config (for this host)", "--node-name equal to uname -n", "set the node's hostname"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// Setup runs Complete before it touches the manager or the node: the check
// cannot be bypassed by starting the agent through Setup (as every binary and
// test does), and a refused agent leaves nothing behind.
func TestSetupRefusesNodeNameThatIsNotTheHostname(t *testing.T) {
	cfg := hostnameConfig(t, "primary-worker-1", "some-other-host")
	err := Setup(nil, cfg) // a nil manager: Setup must fail before using it
	if err == nil || !strings.Contains(err.Error(), `host name "some-other-host"`) {
		t.Fatalf("Setup: %v, want the host name mismatch", err)
	}
	if _, err := os.Stat(cfg.ResourceDir); !os.IsNotExist(err) {
		t.Errorf("a refused agent prepared %s (stat: %v)", cfg.ResourceDir, err)
	}
}

// Names drbdadm takes for this host start (drbd-utils hostnames_equal).
func TestCompleteAcceptsTheHostname(t *testing.T) {
	for _, c := range []struct{ node, host string }{
		{"primary-worker-1", "primary-worker-1"},
		{"Worker-1", "worker-1"},               // case-insensitive
		{"worker-1.cloud.example", "worker-1"}, // FQDN node name, short hostname
		{"worker-1", "worker-1.cloud.example"}, // and the other way round
		{"worker-1.cloud.example", "WORKER-1.cloud.example"},
	} {
		cfg := hostnameConfig(t, c.node, c.host)
		if err := cfg.Complete(); err != nil {
			t.Errorf("node %q on host %q: %v", c.node, c.host, err)
		}
	}
}

func TestDrbdHostnamesEqual(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"a", "a", true},
		{"a", "A", true},
		{"a", "b", false},
		{"a", "ab", false},
		{"ab", "a.x", false},
		{"a.x", "a", true},
		{"a.x", "a.y", false}, // both have a domain: whole names
		{"a.x", "A.X", true},
		{"a.", "a", true},
	} {
		if got := drbdHostnamesEqual(c.a, c.b); got != c.want {
			t.Errorf("drbdHostnamesEqual(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// Without Hostname the agent asks what drbdadm would: $__DRBD_NODE__ when set,
// else the kernel's node name.
func TestCompleteAsksTheKernelWhenHostnameIsEmpty(t *testing.T) {
	kernel, err := os.Hostname()
	if err != nil {
		t.Skip(err)
	}
	t.Setenv(DrbdNodeEnv, "")
	cfg := hostnameConfig(t, kernel, "")
	if err := cfg.Complete(); err != nil {
		t.Fatalf("node name = kernel hostname %q: %v", kernel, err)
	}
	if cfg.Hostname != kernel {
		t.Errorf("Hostname %q, want the kernel's %q", cfg.Hostname, kernel)
	}
	cfg = hostnameConfig(t, kernel+"-not", "")
	if err := cfg.Complete(); err == nil || !strings.Contains(err.Error(), `host name "`+kernel+`"`) {
		t.Errorf("node name %q on host %q: %v, want the mismatch", kernel+"-not", kernel, err)
	}

	t.Setenv(DrbdNodeEnv, "pretend-node")
	cfg = hostnameConfig(t, "pretend-node", "")
	if err := cfg.Complete(); err != nil {
		t.Errorf("with %s=pretend-node: %v", DrbdNodeEnv, err)
	}
}
