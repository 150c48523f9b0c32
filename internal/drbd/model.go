package drbd

import "maps"

// ResourceStatus is the per-resource state that both the events2 Tracker
// and the `status --json` parser produce, so a single status writer can
// consume either source.
type ResourceStatus struct {
	Name   string
	NodeID int // local node id; -1 when unknown (events2 does not print it)
	Role   string
	// Suspended is true when I/O is suspended for any reason;
	// SuspendedReason keeps drbd's reason list ("user", "quorum", ...).
	Suspended       bool
	SuspendedReason string
	// MayPromote/PromotionScore are only printed by events2 (drbd-utils
	// 9.1+); MayPromoteKnown tells "no" from "not reported".
	MayPromote      bool
	MayPromoteKnown bool
	PromotionScore  int
	Devices         map[int]DeviceStatus     // by volume number
	Connections     map[int]ConnectionStatus // by peer node id
}

// DeviceStatus is the local side of one volume.
type DeviceStatus struct {
	Volume      int
	Minor       int
	DiskState   string
	Quorum      bool
	QuorumKnown bool
	SizeKiB     uint64 // 0 when not reported
	ReadKiB     uint64
	WrittenKiB  uint64
}

// ConnectionStatus is the link to one peer node.
type ConnectionStatus struct {
	PeerNodeID      int
	Name            string // conn-name, normally the peer's hostname
	ConnectionState string
	PeerRole        string
	Congested       bool
	// APInFlightSectors are the application writes sent to the peer and not
	// yet confirmed by it (ap-in-flight, 512-byte sectors: the kernel's
	// connection->ap_in_flight, drbd_int.h in LINBIT/drbd).
	APInFlightSectors uint64
	PeerDevices       map[int]PeerDeviceStatus // by volume number
}

// PeerDeviceStatus is one volume as replicated to one peer.
type PeerDeviceStatus struct {
	Volume           int
	ReplicationState string
	PeerDiskState    string
	// PercentInSync is drbd's resync "done" while resyncing, 100 when the
	// peer is UpToDate and Established, else derived from out-of-sync.
	PercentInSync  float64
	OutOfSyncBytes uint64 // out-of-sync KiB * 1024, saturating
	ReceivedKiB    uint64
	SentKiB        uint64
	Pending        uint64
	Unacked        uint64
	// Deltas since the previous update of this peer device, computed with
	// CounterDelta so a 64-bit wrap yields the right small number.
	ReceivedDeltaKiB uint64
	SentDeltaKiB     uint64
}

// Clone returns a deep copy; the maps of the copy are not shared.
func (r ResourceStatus) Clone() ResourceStatus {
	r.Devices = maps.Clone(r.Devices)
	conns := make(map[int]ConnectionStatus, len(r.Connections))
	for id, c := range r.Connections {
		c.PeerDevices = maps.Clone(c.PeerDevices)
		conns[id] = c
	}
	r.Connections = conns
	if r.Devices == nil {
		r.Devices = map[int]DeviceStatus{}
	}
	return r
}

// LacksQuorum reports whether drbd says this node has no quorum: any
// device reporting quorum:no, or I/O suspended for quorum. Unknown
// quorum (old drbd-utils) is not treated as lost.
func (r ResourceStatus) LacksQuorum() bool {
	for _, d := range r.Devices {
		if d.QuorumKnown && !d.Quorum {
			return true
		}
	}
	return hasReason(r.SuspendedReason, "quorum")
}

func hasReason(list, want string) bool {
	for list != "" {
		var item string
		item, list, _ = cut(list, ',')
		if item == want {
			return true
		}
	}
	return false
}

func cut(s string, sep byte) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func newResourceStatus(name string) *ResourceStatus {
	return &ResourceStatus{
		Name:        name,
		NodeID:      -1,
		Devices:     map[int]DeviceStatus{},
		Connections: map[int]ConnectionStatus{},
	}
}
