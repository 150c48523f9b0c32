package nodeagent

import (
	"fmt"
	"net/netip"
	"strings"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// Networks is a list of CIDRs, as the --replication-networks flag takes it
// (comma-separated).
type Networks []netip.Prefix

// String implements flag.Value.
func (n *Networks) String() string {
	out := make([]string, 0, len(*n))
	for _, p := range *n {
		out = append(out, p.String())
	}
	return strings.Join(out, ",")
}

// Set implements flag.Value; each call adds to the list.
func (n *Networks) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return fmt.Errorf("%q is not a CIDR (e.g. 10.0.0.0/16): %w", s, err)
		}
		*n = append(*n, p.Masked())
	}
	return nil
}

// Contains reports whether addr lies in one of the networks.
func (n Networks) Contains(addr string) bool {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, p := range n {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// refusedPeer is the first peer of spec whose address lies outside the
// replication networks, or nil. Peers come from the other cluster's agent's
// status.address, relayed by quorum-manager; the list keeps a forged spec
// from sending the replica anywhere else.
func (n Networks) refusedPeer(spec *srv1alpha1.DRBDResourceSpec) *srv1alpha1.DRBDPeer {
	for i := range spec.Peers {
		if !n.Contains(spec.Peers[i].Address) {
			return &spec.Peers[i]
		}
	}
	return nil
}
