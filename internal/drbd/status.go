package drbd

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// JSONResource is one element of `drbdsetup status --json [--statistics]`.
// Field names follow drbd-utils' output exactly (note "peer_devices" with
// an underscore, unlike every other key).
type JSONResource struct {
	Name             string           `json:"name"`
	NodeID           int              `json:"node-id"`
	Role             string           `json:"role"`
	Suspended        bool             `json:"suspended"`
	SuspendedUser    bool             `json:"suspended-user"`
	SuspendedNoData  bool             `json:"suspended-no-data"`
	SuspendedFencing bool             `json:"suspended-fencing"`
	SuspendedQuorum  bool             `json:"suspended-quorum"`
	ForceIOFailures  bool             `json:"force-io-failures"`
	WriteOrdering    string           `json:"write-ordering"`
	Devices          []JSONDevice     `json:"devices"`
	Connections      []JSONConnection `json:"connections"`
}

// JSONDevice is a local volume in status --json.
type JSONDevice struct {
	Volume       int    `json:"volume"`
	Minor        int    `json:"minor"`
	DiskState    string `json:"disk-state"`
	Client       bool   `json:"client"`
	Open         bool   `json:"open"`
	Quorum       *bool  `json:"quorum"`
	Size         uint64 `json:"size"`
	Read         uint64 `json:"read"`
	Written      uint64 `json:"written"`
	ALWrites     uint64 `json:"al-writes"`
	BMWrites     uint64 `json:"bm-writes"`
	UpperPending uint64 `json:"upper-pending"`
	LowerPending uint64 `json:"lower-pending"`
}

// JSONConnection is a peer connection in status --json.
type JSONConnection struct {
	PeerNodeID      int              `json:"peer-node-id"`
	Name            string           `json:"name"`
	ConnectionState string           `json:"connection-state"`
	Congested       bool             `json:"congested"`
	PeerRole        string           `json:"peer-role"`
	TLS             bool             `json:"tls"`
	APInFlight      uint64           `json:"ap-in-flight"`
	RSInFlight      uint64           `json:"rs-in-flight"`
	Paths           []JSONPath       `json:"paths"`
	PeerDevices     []JSONPeerDevice `json:"peer_devices"`
}

// JSONPath is one network path of a connection (drbd-utils 9.2x+).
type JSONPath struct {
	ThisHost    JSONHost `json:"this_host"`
	RemoteHost  JSONHost `json:"remote_host"`
	Established bool     `json:"established"`
}

// JSONHost is an endpoint of a path.
type JSONHost struct {
	Address string `json:"address"`
	Port    int    `json:"port"`
	Family  string `json:"family"`
}

// JSONPeerDevice is one volume of a connection. The resync detail fields
// only appear while a resync runs (has-sync-details).
type JSONPeerDevice struct {
	Volume                 int      `json:"volume"`
	ReplicationState       string   `json:"replication-state"`
	PeerDiskState          string   `json:"peer-disk-state"`
	PeerClient             bool     `json:"peer-client"`
	ResyncSuspended        string   `json:"resync-suspended"`
	Received               uint64   `json:"received"`
	Sent                   uint64   `json:"sent"`
	OutOfSync              uint64   `json:"out-of-sync"`
	Pending                uint64   `json:"pending"`
	Unacked                uint64   `json:"unacked"`
	HasSyncDetails         bool     `json:"has-sync-details"`
	HasOnlineVerifyDetails bool     `json:"has-online-verify-details"`
	PercentInSync          float64  `json:"percent-in-sync"`
	RSTotal                uint64   `json:"rs-total"`
	PercentResyncDone      *float64 `json:"percent-resync-done"`
	EstimatedSecondsToEnd  *float64 `json:"estimated-seconds-to-finish"`
}

// ParseStatusJSON decodes `drbdsetup status --json` output. Empty output
// (no resources configured) yields an empty slice, not an error.
func ParseStatusJSON(data []byte) ([]JSONResource, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, nil
	}
	var out []JSONResource
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("drbdsetup status --json: %w", err)
	}
	for i := range out {
		if out[i].Name == "" {
			return nil, fmt.Errorf("drbdsetup status --json: resource #%d has no name", i)
		}
	}
	return out, nil
}

// ToStatus converts a decoded status --json resource into the model the
// Tracker maintains.
func (j *JSONResource) ToStatus() ResourceStatus {
	r := newResourceStatus(j.Name)
	r.NodeID = j.NodeID
	r.Role = j.Role
	r.Suspended = j.Suspended
	r.SuspendedReason = jsonSuspendReason(j)
	for _, d := range j.Devices {
		ds := DeviceStatus{
			Volume: d.Volume, Minor: d.Minor, DiskState: d.DiskState,
			SizeKiB: d.Size, ReadKiB: d.Read, WrittenKiB: d.Written,
		}
		if d.Quorum != nil {
			ds.Quorum, ds.QuorumKnown = *d.Quorum, true
		}
		r.Devices[d.Volume] = ds
	}
	for _, c := range j.Connections {
		cs := ConnectionStatus{
			PeerNodeID: c.PeerNodeID, Name: c.Name, ConnectionState: c.ConnectionState,
			PeerRole: c.PeerRole, Congested: c.Congested, APInFlightSectors: c.APInFlight,
			PeerDevices: make(map[int]PeerDeviceStatus, len(c.PeerDevices)),
		}
		for _, p := range c.PeerDevices {
			pct := p.PercentInSync
			if p.PercentResyncDone != nil && isResyncState(p.ReplicationState) {
				pct = *p.PercentResyncDone
			}
			cs.PeerDevices[p.Volume] = PeerDeviceStatus{
				Volume: p.Volume, ReplicationState: p.ReplicationState,
				PeerDiskState: p.PeerDiskState, PercentInSync: pct,
				OutOfSyncBytes: kibToBytes(p.OutOfSync),
				ReceivedKiB:    p.Received, SentKiB: p.Sent,
				Pending: p.Pending, Unacked: p.Unacked,
			}
		}
		r.Connections[c.PeerNodeID] = cs
	}
	return *r
}

// jsonSuspendReason rebuilds events2's comma list from the JSON booleans
// so LacksQuorum works the same for both sources.
func jsonSuspendReason(j *JSONResource) string {
	var b []byte
	add := func(on bool, s string) {
		if !on {
			return
		}
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = append(b, s...)
	}
	add(j.SuspendedUser, "user")
	add(j.SuspendedNoData, "no-data")
	add(j.SuspendedFencing, "fencing")
	add(j.SuspendedQuorum, "quorum")
	if len(b) == 0 {
		return "no"
	}
	return string(b)
}

// StatusFromJSON parses status --json output straight into the model.
func StatusFromJSON(data []byte) ([]ResourceStatus, error) {
	res, err := ParseStatusJSON(data)
	if err != nil {
		return nil, err
	}
	out := make([]ResourceStatus, 0, len(res))
	for i := range res {
		out = append(out, res[i].ToStatus())
	}
	return out, nil
}
