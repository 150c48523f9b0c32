package nodeagent

import (
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/siterecovery/siterecovery/internal/drbd"
)

// Defaults of Config.
const (
	DefaultResourceDir    = "/etc/drbd.d/siterecovery"
	DefaultKubeletDir     = "/var/lib/kubelet"
	DefaultStatusInterval = time.Second
)

// Config is what the agent knows about its node and its tools.
type Config struct {
	// NodeName is this node's name (downward API spec.nodeName); the agent only acts
	// on DRBDResources whose spec.nodeName equals it. It is also the DRBD host name:
	// the agent renders the local replica's section as `on <NodeName>`, so it must
	// be the name drbdadm takes for this host (Hostname); Complete checks that.
	NodeName string
	// Hostname is the host name drbdadm matches `on` sections by on this node:
	// `uname -n`, or $__DRBD_NODE__ when set (DrbdNodeEnv). Empty means ask the
	// kernel, which is what the binary does; tests that simulate a node set it
	// to the simulated node's name, the name their DRBD simulator answers to.
	Hostname string
	// ReplicationAddress is the node IP DRBD listens on; reported as status.address.
	ReplicationAddress string
	// ReplicationNetworks are the networks a peer's address must lie in: the
	// cluster admin's list of where replication may go (chart value
	// drbdNodeAgent.replicationNetworks). The agent never connects to a peer
	// outside them. Required: an empty list would let a DRBDResource send a
	// replica to any address.
	ReplicationNetworks Networks
	// ResourceDir is where the agent renders <resource>.res files and its own
	// top-level drbdadm configuration file (ConfigFileName).
	ResourceDir string
	// DrbdadmPath and DrbdsetupPath are the drbd-utils binaries.
	DrbdadmPath   string
	DrbdsetupPath string
	// KubeletDir is the kubelet root, used to resolve backingPVC to a block device.
	KubeletDir string

	// Exec runs drbdadm and drbdsetup; nil means the operating system.
	Exec drbd.Executor
	// Clock decides every time-based behaviour; nil means the real clock.
	Clock clock.WithTicker
	// Devices resolves backing devices; nil means the kubelet's volumeDevices folder.
	Devices DeviceResolver
	// StatusInterval is the minimum time between two status writes of one resource.
	StatusInterval time.Duration
	// MaxConcurrentReconciles defaults to 4.
	MaxConcurrentReconciles int
	// HeartbeatInterval is how often the agent renews its heartbeat Lease;
	// DefaultHeartbeatInterval if zero.
	HeartbeatInterval time.Duration
	// ClaimRecheckInterval is how often the claims of a configured replica
	// are checked again; DefaultClaimRecheckInterval if zero.
	ClaimRecheckInterval time.Duration
	// Metrics is where the agent registers its live DRBD figures
	// (figures.go): the binary's is controller-runtime's registry, which
	// /metrics serves. Nil registers none, for tests that run several
	// agents in one process.
	Metrics prometheus.Registerer
}

// BindFlags registers the agent's own flags.
func (c *Config) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.NodeName, "node-name", "", "name of this node (downward API spec.nodeName); required; drbdadm must take it for this host: uname -n, or the same first label when either name is short")
	fs.StringVar(&c.ReplicationAddress, "replication-address", "", "IP address DRBD replicates over on this node; required")
	fs.Var(&c.ReplicationNetworks, "replication-networks", "comma-separated CIDRs the DRBD peers' addresses must lie in (the replication networks of both clusters); required")
	fs.StringVar(&c.ResourceDir, "resource-dir", DefaultResourceDir, "folder the agent renders DRBD resource files into")
	fs.StringVar(&c.DrbdadmPath, "drbdadm", "drbdadm", "path of drbdadm")
	fs.StringVar(&c.DrbdsetupPath, "drbdsetup", "drbdsetup", "path of drbdsetup")
	fs.StringVar(&c.KubeletDir, "kubelet-dir", DefaultKubeletDir, "kubelet root folder, to resolve backing PVCs to block devices")
}

// Complete fills defaults and checks the configuration.
func (c *Config) Complete() error {
	if c.ResourceDir == "" {
		c.ResourceDir = DefaultResourceDir
	}
	if c.KubeletDir == "" {
		c.KubeletDir = DefaultKubeletDir
	}
	if c.DrbdadmPath == "" {
		c.DrbdadmPath = "drbdadm"
	}
	if c.DrbdsetupPath == "" {
		c.DrbdsetupPath = "drbdsetup"
	}
	if c.Exec == nil {
		c.Exec = drbd.OSExecutor{}
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.StatusInterval <= 0 {
		c.StatusInterval = DefaultStatusInterval
	}
	if c.MaxConcurrentReconciles <= 0 {
		c.MaxConcurrentReconciles = 4
	}
	var errs []error
	if c.Hostname == "" {
		h, err := drbdHostname()
		if err != nil {
			errs = append(errs, err)
		}
		c.Hostname = h
	}
	switch {
	case c.NodeName == "":
		errs = append(errs, errors.New("--node-name is required (set it from the downward API spec.nodeName)"))
	case c.Hostname != "":
		errs = append(errs, checkHostname(c.NodeName, c.Hostname))
	}
	if a, err := netip.ParseAddr(c.ReplicationAddress); err != nil || a.Zone() != "" {
		errs = append(errs, fmt.Errorf("--replication-address %q must be an IPv4 or IPv6 address (the node IP)", c.ReplicationAddress))
	}
	if len(c.ReplicationNetworks) == 0 {
		errs = append(errs, errors.New("--replication-networks is required: the CIDRs DRBD peers may be in (chart value drbdNodeAgent.replicationNetworks); the agent connects to no peer outside them"))
	}
	if !filepath.IsAbs(c.ResourceDir) {
		errs = append(errs, fmt.Errorf("--resource-dir %q must be an absolute path", c.ResourceDir))
	}
	return errors.Join(errs...)
}
