package drbd

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strings"
)

// ResourceConfig is everything needed to render one DRBD 9 resource file.
type ResourceConfig struct {
	Name     string
	Protocol string // "A" (async, for WAN/DR) or "C" (sync)
	Quorum   QuorumOptions
	Nodes    []NodeConfig
	Volumes  []VolumeConfig
	// Standalone allows a single node: every peer was left out on purpose
	// (fenced), so the resource runs without connections.
	Standalone bool
	// PeerAuth, when set, makes the peers authenticate each other.
	PeerAuth *PeerAuth
	// TLS, when set, encrypts the replication link (tls.go).
	TLS *TLS
}

// QuorumOptions map to the resource's options section.
type QuorumOptions struct {
	Quorum     string // "majority" or "off"; "" means "off"
	OnNoQuorum string // "io-error" or "suspend-io"; "" omits it
}

// NodeConfig is one `on <host>` section.
type NodeConfig struct {
	Hostname string // must equal `uname -n` on that node
	NodeID   int
	Address  string // IPv4 or IPv6 literal
	Port     int
}

// VolumeConfig is one `volume N` section.
type VolumeConfig struct {
	Number int
	Minor  int
	Disk   string // backing block device path
	// MetaDisk is where DRBD keeps the volume's metadata: "internal" ("" too)
	// puts it at the end of Disk, which shrinks the device below the disk; a
	// /dev/ path puts it on a device of its own (flex-external, see
	// ExternalMetaSize), and the device then exposes all of Disk.
	MetaDisk string
}

// Port range reserved for DRBD replication links by this project.
const (
	MinPort = 7000
	MaxPort = 7999
)

// Validate checks the config against what drbdadm accepts and this
// project's conventions, reporting every problem at once.
func (c *ResourceConfig) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	if err := validateName("resource name", c.Name); err != nil {
		errs = append(errs, err)
	}
	if c.Protocol != "A" && c.Protocol != "C" {
		add("protocol %q: must be A or C", c.Protocol)
	}
	switch c.Quorum.Quorum {
	case "", "off", "majority":
	default:
		add("quorum %q: must be majority or off", c.Quorum.Quorum)
	}
	switch c.Quorum.OnNoQuorum {
	case "", "io-error", "suspend-io":
	default:
		add("on-no-quorum %q: must be io-error or suspend-io", c.Quorum.OnNoQuorum)
	}
	switch {
	case c.Standalone && len(c.Nodes) < 1:
		add("need the local node")
	case !c.Standalone && len(c.Nodes) < 2:
		add("need at least 2 nodes, have %d", len(c.Nodes))
	}
	errs = append(errs, validateNodes(c.Nodes)...)
	if len(c.Volumes) == 0 {
		add("need at least one volume")
	}
	errs = append(errs, validateVolumes(c.Volumes)...)
	if c.PeerAuth != nil {
		errs = append(errs, c.PeerAuth.validate())
	}
	if c.TLS != nil {
		errs = append(errs, c.TLS.validate())
	}
	return errors.Join(errs...)
}

func validateNodes(nodes []NodeConfig) []error {
	var errs []error
	ids, hosts := map[int]bool{}, map[string]bool{}
	family := ""
	for i, n := range nodes {
		where := fmt.Sprintf("node %d (%s)", i, n.Hostname)
		if err := validateName(where+" hostname", n.Hostname); err != nil {
			errs = append(errs, err)
		}
		if hosts[n.Hostname] {
			errs = append(errs, fmt.Errorf("%s: duplicate hostname", where))
		}
		hosts[n.Hostname] = true
		if n.NodeID < 0 || n.NodeID > 31 {
			errs = append(errs, fmt.Errorf("%s: node-id %d out of range 0..31", where, n.NodeID))
		} else if ids[n.NodeID] {
			errs = append(errs, fmt.Errorf("%s: duplicate node-id %d", where, n.NodeID))
		}
		ids[n.NodeID] = true
		if n.Port < MinPort || n.Port > MaxPort {
			errs = append(errs, fmt.Errorf("%s: port %d outside %d-%d", where, n.Port, MinPort, MaxPort))
		}
		addr, err := netip.ParseAddr(n.Address)
		if err != nil || addr.Zone() != "" {
			errs = append(errs, fmt.Errorf("%s: address %q is not an IPv4/IPv6 literal", where, n.Address))
			continue
		}
		f := addrFamily(addr)
		if family != "" && f != family {
			errs = append(errs, fmt.Errorf("%s: address family %s differs from other nodes (%s)", where, f, family))
		}
		family = f
	}
	return errs
}

func validateVolumes(vols []VolumeConfig) []error {
	var errs []error
	nums, minors := map[int]bool{}, map[int]bool{}
	for _, v := range vols {
		where := fmt.Sprintf("volume %d", v.Number)
		if v.Number < 0 || v.Number > 65534 {
			errs = append(errs, fmt.Errorf("%s: volume number out of range 0..65534", where))
		} else if nums[v.Number] {
			errs = append(errs, fmt.Errorf("%s: duplicate volume number", where))
		}
		nums[v.Number] = true
		if v.Minor < 0 || v.Minor > 1048575 {
			errs = append(errs, fmt.Errorf("%s: minor %d out of range 0..1048575", where, v.Minor))
		} else if minors[v.Minor] {
			errs = append(errs, fmt.Errorf("%s: duplicate minor %d", where, v.Minor))
		}
		minors[v.Minor] = true
		if !strings.HasPrefix(v.Disk, "/dev/") || strings.ContainsAny(v.Disk, " \t\n\";{}#") {
			errs = append(errs, fmt.Errorf("%s: disk %q must be a /dev/ path without spaces or quotes", where, v.Disk))
		}
		switch {
		case v.MetaDisk == "" || v.MetaDisk == "internal":
		case !strings.HasPrefix(v.MetaDisk, "/dev/") || strings.ContainsAny(v.MetaDisk, " \t\n\";{}#"):
			errs = append(errs, fmt.Errorf("%s: meta-disk %q must be internal or a /dev/ path without spaces or quotes", where, v.MetaDisk))
		case v.MetaDisk == v.Disk:
			errs = append(errs, fmt.Errorf("%s: meta-disk %q is the data disk itself; use internal", where, v.MetaDisk))
		}
	}
	return errs
}

// validateName accepts what is safe both as a drbdadm token and as a
// kernel resource/host name: [A-Za-z0-9_.-], starting alphanumeric,
// at most 63 characters (DNS label/hostname friendly).
func validateName(what, s string) error {
	if s == "" {
		return fmt.Errorf("%s: empty", what)
	}
	if len(s) > 63 {
		return fmt.Errorf("%s %q: longer than 63 characters", what, s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if i == 0 && !alnum {
			return fmt.Errorf("%s %q: must start with a letter or digit", what, s)
		}
		if !alnum && c != '-' && c != '_' && c != '.' {
			return fmt.Errorf("%s %q: invalid character %q", what, s, c)
		}
	}
	return nil
}

func addrFamily(a netip.Addr) string {
	if a.Is4() || a.Is4In6() {
		return "ipv4"
	}
	return "ipv6"
}

// Render produces the resource file. Nodes and volumes are sorted so the
// output only changes when the configuration does (WriteFileAtomic then
// reports "unchanged" and no adjust is needed).
func (c *ResourceConfig) Render() ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("resource %q: %w", c.Name, err)
	}
	nodes := append([]NodeConfig(nil), c.Nodes...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].NodeID < nodes[j].NodeID })
	vols := append([]VolumeConfig(nil), c.Volumes...)
	sort.Slice(vols, func(i, j int) bool { return vols[i].Number < vols[j].Number })

	var b bytes.Buffer
	fmt.Fprintf(&b, "# Generated by siterecovery; do not edit.\nresource %s {\n", c.Name)
	fmt.Fprintf(&b, "    net {\n        protocol %s;\n", c.Protocol)
	if c.Protocol == "A" {
		// The bound on what a crash loses: see ProtocolASendBuffer.
		fmt.Fprintf(&b, "        sndbuf-size %d;\n", ProtocolASendBuffer)
	}
	if a := c.PeerAuth; a != nil {
		fmt.Fprintf(&b, "        cram-hmac-alg %s;\n        shared-secret \"%s\";\n", a.Alg, a.Secret)
	}
	if c.TLS != nil {
		c.TLS.render(&b)
	}
	b.WriteString("    }\n")
	quorum := c.Quorum.Quorum
	if quorum == "" {
		quorum = "off"
	}
	fmt.Fprintf(&b, "    options {\n        quorum %s;\n", quorum)
	if c.Quorum.OnNoQuorum != "" {
		fmt.Fprintf(&b, "        on-no-quorum %s;\n", c.Quorum.OnNoQuorum)
	}
	b.WriteString("    }\n")
	for _, v := range vols {
		meta := v.MetaDisk
		if meta == "" {
			meta = "internal"
		}
		fmt.Fprintf(&b, "    volume %d {\n        device minor %d;\n        disk %s;\n        meta-disk %s;\n    }\n",
			v.Number, v.Minor, v.Disk, meta)
	}
	hosts := make([]string, 0, len(nodes))
	for _, n := range nodes {
		addr := netip.MustParseAddr(n.Address) // validated above
		ep := fmt.Sprintf("ipv4 %s:%d", addr.Unmap(), n.Port)
		if addrFamily(addr) == "ipv6" {
			ep = fmt.Sprintf("ipv6 [%s]:%d", addr, n.Port)
		}
		fmt.Fprintf(&b, "    on %s {\n        node-id %d;\n        address %s;\n    }\n", n.Hostname, n.NodeID, ep)
		hosts = append(hosts, n.Hostname)
	}
	if len(hosts) > 1 {
		fmt.Fprintf(&b, "    connection-mesh {\n        hosts %s;\n    }\n", strings.Join(hosts, " "))
	}
	b.WriteString("}\n")
	return b.Bytes(), nil
}
