package sim

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// PeerView is one peer-device as seen from a node.
type PeerView struct {
	Volume      int
	Replication string
	PeerDisk    string
	// OOS is the bitmap's out-of-sync KiB. Protocol A writes in flight are
	// not in it while connected: DRBD sets their bits only when the
	// connection is lost before the peer confirmed them (drbd_req.c
	// __req_mod CONNECTION_LOST clears RQ_NET_OK; drbd_req_done then
	// marks the range out of sync), which LoseLag and linkLost model. Until
	// then they are counted in ConnView.APInFlight.
	OOS        uint64
	Done       float64
	Syncing    bool
	Sent, Recv uint64
}

// ConnView is one connection as seen from a node.
type ConnView struct {
	Peer      *Node
	State     string
	PeerRole  string
	Connected bool
	// APInFlight is ap-in-flight in 512-byte sectors: the protocol A writes
	// this node completed and sent but the peer has not confirmed on its disk
	// (drbd_req.c in LINBIT/drbd adds a request's sectors to the connection's
	// ap_in_flight when it is handed to the network and takes them off when
	// it is done, for protocol A at the epoch's barrier ack). Here: the
	// window not yet delivered (inFlightKiB). Protocol C writes complete on
	// the peer's ack, so none is left in flight after they complete.
	APInFlight uint64
	// Congested is the connection's NET_CONGESTED flag: the data socket
	// holds more than four fifths of its send buffer
	// (drbd_transport_tcp.c dtt_update_congested in LINBIT/drbd). Here:
	// the protocol A window against sndbuf-size; an auto-tuned buffer
	// (sndbuf-size 0) is never full.
	Congested bool
	Peers     []PeerView
}

// DiskView returns the disk state node n reports for volume v: its
// persistent state. Protocol A writes in flight do not lower it: in
// LINBIT/drbd, drbd_state.c sanitize_state caps a disk below UpToDate only in
// the sync-target states and in Behind (on-congestion pull-ahead, capped at
// Outdated), while Established allows UpToDate; the unconfirmed writes are
// counted on the connection instead (drbd_req.c mod_rq_state, ap_in_flight;
// ConnView.APInFlight here). The simulator models on-congestion block only
// (sndbuf.go), never Ahead/Behind, so no cap applies.
func (r *Res) DiskView(n *Node, v int) string {
	return n.Disk[v]
}

// Conns returns n's connections sorted by peer node id.
func (r *Res) Conns(n *Node, sizeKiB uint64) []ConnView {
	var out []ConnView
	for _, m := range r.Peers(n) {
		if !n.configures(m) {
			continue // no connection configured: DRBD does not list it
		}
		c := ConnView{Peer: m, State: "Connecting", PeerRole: "Unknown", Connected: r.Connected(n, m)}
		if c.Connected {
			c.State, c.PeerRole = "Connected", m.Role
			if r.Protocol == "A" {
				in := r.inFlightKiB(n, m)
				c.APInFlight = 2 * in
				c.Congested = r.SndBufKiB > 0 && 5*in > 4*r.SndBufKiB
			}
		}
		if n.StandAlone[m.Host] {
			c.State = "StandAlone" // split brain or drbdadm disconnect: not even trying
		}
		p := r.Pair(n.Host, m.Host)
		for _, v := range sortedVols(r) {
			pv := PeerView{Volume: v, Replication: "Off", PeerDisk: "DUnknown",
				OOS: p.OOS[v], Sent: n.Sent[m.Host], Recv: n.Recv[m.Host]}
			if c.Connected {
				pv.Replication, pv.PeerDisk = "Established", r.DiskView(m, v)
				if p.OOS[v] > 0 && r.Nodes[p.Source] != nil && r.Nodes[p.Source].Disk[v] == "UpToDate" {
					pv.Syncing = true
					pv.Replication = "SyncTarget"
					if p.Source == n.Host {
						pv.Replication = "SyncSource"
					}
					total := max(p.Total[v], p.OOS[v])
					pv.Done = 100 * float64(total-p.OOS[v]) / float64(total)
				}
			}
			c.Peers = append(c.Peers, pv)
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Peer.NodeID < out[j].Peer.NodeID })
	return out
}

func sortedVols(r *Res) []int {
	vols := make([]int, 0, len(r.Volumes))
	for v := range r.Volumes {
		vols = append(vols, v)
	}
	sort.Ints(vols)
	return vols
}

// Suspended is drbd's suspend reason list for n.
func (r *Res) Suspended(n *Node) string {
	if n.OnNoQuorum == "suspend-io" && !r.HasQuorum(n) {
		return "quorum"
	}
	return "no"
}

// Promotion mirrors drbd-utils' may_promote/promotion_score computation.
func (r *Res) Promotion(n *Node) (bool, int) {
	if !r.HasQuorum(n) {
		return false, 0
	}
	havePrimary := n.Role == "Primary"
	conns := r.Conns(n, 0)
	for _, c := range conns {
		havePrimary = havePrimary || c.PeerRole == "Primary"
	}
	upToDate, minReplicas, allDisk := 0, -1, 1
	for _, v := range sortedVols(r) {
		replicas := 0
		switch r.DiskView(n, v) {
		case "UpToDate":
			upToDate++
			replicas++
		case "Consistent", "Inconsistent":
		default:
			allDisk = 0
		}
		for _, c := range conns {
			for _, pv := range c.Peers {
				if pv.Volume == v && pv.PeerDisk == "UpToDate" {
					replicas++
				}
			}
		}
		if minReplicas < 0 || replicas < minReplicas {
			minReplicas = replicas
		}
	}
	if minReplicas <= 0 {
		return false, 0
	}
	return !havePrimary, allDisk*10000 + min(upToDate, 99)*100 + min(minReplicas, 99)
}

// LocalAddr is n's own path endpoint.
func (n *Node) LocalAddr() string { return n.Addr }

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// addrJSON splits "ipv4:1.2.3.4:7000" / "ipv6:[::1]:7000" for status --json.
func addrJSON(a string) (family, host, port string) {
	family, rest, _ := strings.Cut(a, ":")
	i := strings.LastIndexByte(rest, ':')
	if i < 0 {
		return family, rest, "0"
	}
	return family, strings.Trim(rest[:i], "[]"), rest[i+1:]
}

func fmtPct(f float64) string { return fmt.Sprintf("%.2f", f) }

// deviceOpen reports whether n's device of volume v is held open now.
func (r *Res) deviceOpen(n *Node, v int) bool {
	d := n.dev(v)
	return d != nil && d.isOpen(time.Now())
}
