package sim

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// writeStatusJSON prints `drbdsetup status --json` in drbd-utils'
// hand-rolled layout (including its quirks, e.g. the space after the
// connection-state comma and "peer_devices" with an underscore).
func (w *World) writeStatusJSON(out io.Writer, host, only string) error {
	var b strings.Builder
	b.WriteString("[\n")
	first := true
	for _, name := range sortedNames(w) {
		r := w.Resources[name]
		n := r.Nodes[host]
		if n == nil || !n.Up || (only != "" && only != "all" && only != name) {
			continue
		}
		if !first {
			b.WriteString(",\n")
		}
		first = false
		susp := r.Suspended(n) != "no"
		fmt.Fprintf(&b, "{\n  \"name\": %q,\n  \"node-id\": %d,\n  \"role\": %q,\n  \"suspended\": %t,\n"+
			"  \"suspended-user\": false,\n  \"suspended-no-data\": false,\n  \"suspended-fencing\": false,\n"+
			"  \"suspended-quorum\": %t,\n  \"force-io-failures\": false,\n  \"write-ordering\": \"flush\",\n  \"devices\": [\n",
			name, n.NodeID, n.Role, susp, susp)
		for i, v := range sortedVols(r) {
			if i > 0 {
				b.WriteString(",\n")
			}
			fmt.Fprintf(&b, "    {\n      \"volume\": %d,\n      \"minor\": %d,\n      \"disk-state\": %q,\n      \"client\": false,\n"+
				"      \"open\": %t,\n      \"quorum\": %t,\n      \"size\": %d,\n      \"read\": %d,\n      \"written\": %d,\n"+
				"      \"al-writes\": 0,\n      \"bm-writes\": 0,\n      \"upper-pending\": 0,\n      \"lower-pending\": 0\n    }",
				v, r.Volumes[v].Minor, r.DiskView(n, v), r.deviceOpen(n, v), r.HasQuorum(n), r.sizeKiB(n, v, w.SizeKiB), n.Read[v], n.Written[v])
		}
		b.WriteString(" ],\n  \"connections\": [\n")
		for i, c := range r.Conns(n, w.SizeKiB) {
			if i > 0 {
				b.WriteString(",\n")
			}
			writeConnJSON(&b, n, c, func(v int) uint64 { return r.sizeKiB(n, v, w.SizeKiB) })
		}
		b.WriteString(" ]\n}")
	}
	b.WriteString("\n]\n")
	_, err := io.WriteString(out, b.String())
	return err
}

func writeConnJSON(b *strings.Builder, n *Node, c ConnView, sizeOf func(v int) uint64) {
	fmt.Fprintf(b, "    {\n      \"peer-node-id\": %d,\n      \"name\": %q,\n      \"connection-state\": %q, \n"+
		"      \"congested\": %t,\n      \"peer-role\": %q,\n      \"ap-in-flight\": %d,\n      \"rs-in-flight\": 0,\n",
		c.Peer.NodeID, c.Peer.Host, c.State, c.Congested, c.PeerRole, c.APInFlight)
	lf, lh, lp := addrJSON(n.Addr)
	rf, rh, rp := addrJSON(c.Peer.Addr)
	fmt.Fprintf(b, "      \"paths\": [\n        {\n          \"this_host\": {\n            \"address\": %q,\n            \"port\": %s,\n"+
		"            \"family\": %q\n          },\n          \"remote_host\": {\n            \"address\": %q,\n            \"port\": %s,\n"+
		"            \"family\": %q\n          },\n          \"established\": %t\n        } ],\n",
		lh, numOr0(lp), lf, rh, numOr0(rp), rf, c.Connected)
	b.WriteString("      \"peer_devices\": [\n")
	for i, pv := range c.Peers {
		if i > 0 {
			b.WriteString(",\n")
		}
		pct, size := 100.0, sizeOf(pv.Volume)
		if size > 0 {
			pct = 100 * (1 - float64(min(pv.OOS, size))/float64(size))
		}
		fmt.Fprintf(b, "        {\n          \"volume\": %d,\n          \"replication-state\": %q,\n          \"peer-disk-state\": %q,\n"+
			"          \"peer-client\": false,\n          \"resync-suspended\": \"no\",\n          \"received\": %d,\n          \"sent\": %d,\n"+
			"          \"out-of-sync\": %d,\n          \"pending\": 0,\n          \"unacked\": 0,\n          \"has-sync-details\": false,\n"+
			"          \"has-online-verify-details\": false,\n          \"percent-in-sync\": %.2f",
			pv.Volume, pv.Replication, pv.PeerDisk, pv.Recv, pv.Sent, pv.OOS, pct)
		if pv.Syncing {
			fmt.Fprintf(b, ",\n          \"percent-resync-done\": %.2f", pv.Done)
		}
		b.WriteString("\n        }")
	}
	b.WriteString(" ]\n    }")
}

func numOr0(s string) string {
	for _, c := range s {
		if c < '0' || c > '9' {
			return "0"
		}
	}
	if s == "" {
		return "0"
	}
	return s
}

func sortedNames(w *World) []string {
	names := make([]string, 0, len(w.Resources))
	for name := range w.Resources {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
