package monitor

import (
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// DRBD states the monitor interprets.
const (
	connConnected   = "Connected"
	connUnknown     = "Unknown"
	replEstablished = "Established"
	diskUpToDate    = "UpToDate"
)

// volumeView is one volume's replication state as read from the DRBDResources,
// before the lag is applied.
type volumeView struct {
	state  srv1alpha1.VolumeReplicationState
	health srv1alpha1.ReplicationHealth
	// linkDownSince is when the side the view comes from saw its link drop, if
	// it is down.
	linkDownSince *time.Time
}

// inSync is the lag definition's "in sync": Connected, Established, the replica
// UpToDate with nothing out of sync, and the active disk UpToDate (or unknown,
// when the view comes from the replica). It reads only status fields so that the
// previous status answers it too.
func inSync(v *srv1alpha1.VolumeReplicationState) bool {
	return v.ConnectionState == connConnected && v.ReplicationState == replEstablished &&
		v.PeerDiskState == diskUpToDate && v.OutOfSyncBytes == 0 &&
		(v.DiskState == diskUpToDate || v.DiskState == "")
}

// viewVolume reads volume n from the active side's DRBDResource when it can,
// otherwise from the replica's own view; with neither the state is Unknown.
func viewVolume(act, rep *srv1alpha1.DRBDResource, n int32) volumeView {
	if reported(act) {
		return activeView(act, rep, n)
	}
	if reported(rep) {
		return replicaView(rep, act, n)
	}
	return volumeView{state: srv1alpha1.VolumeReplicationState{Volume: n, ConnectionState: connUnknown}, health: srv1alpha1.HealthUnknown}
}

func reported(r *srv1alpha1.DRBDResource) bool {
	return r != nil && (r.Status.ObservedGeneration > 0 || len(r.Status.Peers) > 0 || len(r.Status.Volumes) > 0)
}

// activeView is the active side's view of the replica: its link, its own disk,
// and per volume the replication state towards the replica.
func activeView(act, rep *srv1alpha1.DRBDResource, n int32) volumeView {
	v := volumeView{state: srv1alpha1.VolumeReplicationState{Volume: n}}
	for _, d := range act.Status.Volumes {
		if d.Number == n {
			v.state.DiskState = d.DiskState
		}
	}
	peer := peerOf(act, rep)
	if peer == nil {
		v.state.ConnectionState = connUnknown
		v.health = srv1alpha1.HealthDisconnected
		return v
	}
	v.state.ConnectionState = orUnknown(peer.ConnectionState)
	fillPeerVolume(&v.state, peer, n)
	v.health = health(&v.state, v.state.DiskState)
	v.linkDownSince = linkDownSince(act)
	return v
}

// replicaView is the replica's own view when the active side cannot be read:
// its link to the active side and its own disk as the peer disk.
func replicaView(rep, act *srv1alpha1.DRBDResource, n int32) volumeView {
	v := volumeView{state: srv1alpha1.VolumeReplicationState{Volume: n}}
	for _, d := range rep.Status.Volumes {
		if d.Number == n {
			v.state.PeerDiskState = d.DiskState
		}
	}
	peer := peerOf(rep, act)
	if peer == nil {
		v.state.ConnectionState = connUnknown
		v.health = srv1alpha1.HealthUnknown
		return v
	}
	v.state.ConnectionState = orUnknown(peer.ConnectionState)
	disk := v.state.PeerDiskState
	fillPeerVolume(&v.state, peer, n)
	v.state.PeerDiskState = disk
	v.health = health(&v.state, diskUpToDate)
	v.linkDownSince = linkDownSince(rep)
	return v
}

func fillPeerVolume(s *srv1alpha1.VolumeReplicationState, peer *srv1alpha1.DRBDPeerStatus, n int32) {
	for _, pv := range peer.Volumes {
		if pv.Number == n {
			s.ReplicationState, s.PeerDiskState = pv.ReplicationState, pv.PeerDiskState
			s.PercentInSync, s.OutOfSyncBytes = pv.PercentInSync, pv.OutOfSyncBytes
		}
	}
}

// peerOf is the entry of from's peers that is other's node, or the only peer.
func peerOf(from, other *srv1alpha1.DRBDResource) *srv1alpha1.DRBDPeerStatus {
	peers := from.Status.Peers
	if other != nil {
		for i := range peers {
			if peers[i].NodeName == other.Spec.NodeName {
				return &peers[i]
			}
		}
	}
	if len(peers) > 0 {
		return &peers[0]
	}
	return nil
}

// health grades one volume; localDisk is the disk of the side the view comes from.
func health(s *srv1alpha1.VolumeReplicationState, localDisk string) srv1alpha1.ReplicationHealth {
	switch {
	case s.ConnectionState != connConnected:
		return srv1alpha1.HealthDisconnected
	case inSync(s):
		return srv1alpha1.HealthHealthy
	case localDisk != "" && localDisk != diskUpToDate:
		return srv1alpha1.HealthDegraded
	case strings.Contains(s.ReplicationState, "Sync") || s.OutOfSyncBytes > 0:
		// Resync, or protocol A writes not delivered yet.
		return srv1alpha1.HealthSyncing
	default:
		return srv1alpha1.HealthDegraded
	}
}

// linkDownSince is when the agent saw the resource's link drop, from the
// transition of its Connected condition.
func linkDownSince(r *srv1alpha1.DRBDResource) *time.Time {
	c := meta.FindStatusCondition(r.Status.Conditions, srv1alpha1.ConditionConnected)
	if c == nil || c.Status != metav1.ConditionFalse || c.LastTransitionTime.IsZero() {
		return nil
	}
	t := c.LastTransitionTime.Time
	return &t
}

func orUnknown(s string) string {
	if s == "" {
		return connUnknown
	}
	return s
}

// healthRank orders health values from best to worst.
var healthRank = map[srv1alpha1.ReplicationHealth]int{
	srv1alpha1.HealthHealthy: 0, srv1alpha1.HealthSyncing: 1, srv1alpha1.HealthDegraded: 2,
	srv1alpha1.HealthDisconnected: 3, srv1alpha1.HealthUnknown: 4,
}

func worse(a, b srv1alpha1.ReplicationHealth) srv1alpha1.ReplicationHealth {
	if healthRank[b] > healthRank[a] {
		return b
	}
	return a
}
