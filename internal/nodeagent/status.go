package nodeagent

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// statusSetters compute the status from the phase results and the tracked DRBD
// state, in order (Ready last: it summarises the others).
var statusSetters = []func(*Reconciler, *scope){
	setIdentity,
	setDRBDState,
	setConnectedCondition,
	setQuorumCondition,
	setRoleAppliedDefault,
	setStatusAnswered,
	setReadyCondition,
	setKStatus,
}

// setCondition sets c with the reconcile's generation and the injected clock.
func setCondition(s *scope, c metav1.Condition) {
	c.ObservedGeneration = s.obj.Generation
	c.LastTransitionTime = metav1.NewTime(s.now)
	meta.SetStatusCondition(&s.obj.Status.Conditions, c)
}

func setIdentity(r *Reconciler, s *scope) {
	s.obj.Status.Address = r.Config.ReplicationAddress
	s.obj.Status.ObservedGeneration = s.obj.Generation
}

// setDRBDState maps the tracked events2 state onto the status fields.
func setDRBDState(_ *Reconciler, s *scope) {
	st, t := &s.obj.Status, s.tracked
	st.Role, st.MayPromote = t.Role, t.MayPromote
	st.Quorum = s.up && t.Name != "" && !t.LacksQuorum()
	vols := append([]srv1alpha1.DRBDVolume(nil), s.obj.Spec.Volumes...)
	sort.Slice(vols, func(i, j int) bool { return vols[i].Number < vols[j].Number })

	allUpToDate := s.up && t.Name != ""
	prevPaths := map[int32]string{}
	for _, v := range s.before.Volumes {
		prevPaths[v.Number] = v.DevicePath
	}
	st.Volumes = make([]srv1alpha1.DRBDVolumeStatus, 0, len(vols))
	for _, v := range vols {
		d := t.Devices[int(v.Number)]
		path, ok := s.devices[v.Number]
		if !ok {
			path = prevPaths[v.Number]
		}
		st.Volumes = append(st.Volumes, srv1alpha1.DRBDVolumeStatus{Number: v.Number, Minor: v.Minor, DiskState: d.DiskState, DevicePath: path})
		allUpToDate = allUpToDate && d.DiskState == "UpToDate"
	}

	peers := append([]srv1alpha1.DRBDPeer(nil), s.obj.Spec.Peers...)
	sort.Slice(peers, func(i, j int) bool { return peers[i].NodeName < peers[j].NodeName })
	st.Peers = make([]srv1alpha1.DRBDPeerStatus, 0, len(peers))
	peerPrimary := false
	for _, p := range peers {
		c, known := t.Connections[int(p.NodeID)]
		ps := srv1alpha1.DRBDPeerStatus{NodeName: p.NodeName, NodeID: p.NodeID, ConnectionState: c.ConnectionState, PeerRole: c.PeerRole,
			APInFlightBytes: sectorBytes(c.APInFlightSectors)}
		peerPrimary = peerPrimary || (c.ConnectionState == "Connected" && c.PeerRole == string(srv1alpha1.RolePrimary))
		if known {
			for _, v := range vols {
				pd := c.PeerDevices[int(v.Number)]
				ps.Volumes = append(ps.Volumes, srv1alpha1.DRBDPeerVolumeStatus{Number: v.Number,
					ReplicationState: pd.ReplicationState, PeerDiskState: pd.PeerDiskState,
					PercentInSync:  fmt.Sprintf("%.2f", pd.PercentInSync),
					OutOfSyncBytes: int64(min(pd.OutOfSyncBytes, math.MaxInt64)),
					Pending:        int64(min(pd.Pending, math.MaxInt64)), Unacked: int64(min(pd.Unacked, math.MaxInt64))})
			}
		}
		st.Peers = append(st.Peers, ps)
	}
	st.Promotable = allUpToDate && !peerPrimary
}

func setConnectedCondition(_ *Reconciler, s *scope) {
	if !s.up || s.tracked.Name == "" {
		setCondition(s, notUp(srv1alpha1.ConditionConnected))
		return
	}
	var bad, good []string
	for _, p := range s.obj.Status.Peers {
		if p.ConnectionState == "Connected" {
			good = append(good, p.NodeName)
			continue
		}
		state := p.ConnectionState
		if state == "" {
			state = "not configured"
		}
		bad = append(bad, p.NodeName+": "+state)
	}
	if len(bad) > 0 || len(good) == 0 {
		setCondition(s, metav1.Condition{Type: srv1alpha1.ConditionConnected, Status: metav1.ConditionFalse,
			Reason: ReasonDisconnected, Message: "not connected to " + strings.Join(bad, ", ")})
		return
	}
	setCondition(s, metav1.Condition{Type: srv1alpha1.ConditionConnected, Status: metav1.ConditionTrue,
		Reason: ReasonConnected, Message: "connected to " + strings.Join(good, ", ")})
}

func setQuorumCondition(_ *Reconciler, s *scope) {
	switch {
	case !s.up || s.tracked.Name == "":
		setCondition(s, notUp(srv1alpha1.ConditionQuorum))
	case primaryWithoutQuorum(&s.tracked):
		setCondition(s, metav1.Condition{Type: srv1alpha1.ConditionQuorum, Status: metav1.ConditionFalse,
			Reason: ReasonQuorumLost, Message: "DRBD reports no quorum; the node is tainted " + srv1alpha1.LostQuorumTaintKey})
	case s.tracked.LacksQuorum():
		// A Secondary's node is not tainted (Taints): DRBD alone keeps it
		// from being promoted.
		setCondition(s, metav1.Condition{Type: srv1alpha1.ConditionQuorum, Status: metav1.ConditionFalse,
			Reason: ReasonQuorumLost, Message: "DRBD reports no quorum; it cannot be promoted without force"})
	default:
		setCondition(s, metav1.Condition{Type: srv1alpha1.ConditionQuorum, Status: metav1.ConditionTrue,
			Reason: ReasonQuorumPresent, Message: "DRBD reports quorum"})
	}
}

func notUp(condType string) metav1.Condition {
	return metav1.Condition{Type: condType, Status: metav1.ConditionFalse, Reason: ReasonNotUp,
		Message: "DRBD does not report the resource (not up yet)"}
}

// setRoleAppliedDefault reports RoleApplied=Unknown while an earlier phase stops the
// role phase from running and nothing was reported yet.
func setRoleAppliedDefault(_ *Reconciler, s *scope) {
	if s.roleRan || meta.FindStatusCondition(s.obj.Status.Conditions, srv1alpha1.ConditionRoleApplied) != nil {
		return
	}
	setCondition(s, metav1.Condition{Type: srv1alpha1.ConditionRoleApplied, Status: metav1.ConditionUnknown,
		Reason: srv1alpha1.ReasonProgressing, Message: "the role is applied once the resource is configured"})
}

// setReadyCondition: Ready when configured, in the desired role, connected, with
// quorum and UpToDate local data; otherwise it names the first thing missing.
func setReadyCondition(_ *Reconciler, s *scope) {
	for _, t := range []string{srv1alpha1.ConditionConfigured, srv1alpha1.ConditionRoleApplied, srv1alpha1.ConditionConnected, srv1alpha1.ConditionQuorum} {
		c := meta.FindStatusCondition(s.obj.Status.Conditions, t)
		if c == nil || c.Status != metav1.ConditionTrue {
			reason, msg := srv1alpha1.ReasonProgressing, t+" is not reported yet"
			if c != nil {
				reason, msg = c.Reason, t+": "+c.Message
			}
			setCondition(s, metav1.Condition{Type: srv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: msg})
			return
		}
	}
	for _, v := range s.obj.Status.Volumes {
		if v.DiskState != "UpToDate" {
			setCondition(s, metav1.Condition{Type: srv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: srv1alpha1.ReasonSyncing,
				Message: fmt.Sprintf("%s is %s", volumeName(v.Number), v.DiskState)})
			return
		}
	}
	setCondition(s, metav1.Condition{Type: srv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: srv1alpha1.ReasonReconciled,
		Message: "replica configured, in its role, connected, with quorum and UpToDate"})
}

// setKStatus sets Reconciling and Stalled from Ready: a replica on its way to
// Ready is Reconciling, one a phase stalled on (a name conflict, a refused
// peer address or backing device, a spec the agent cannot render) is Stalled.
func setKStatus(_ *Reconciler, s *scope) {
	flow.DeriveKStatus(&s.obj.Status.Conditions, s.obj.Generation, s.stalled)
}

// sectorBytes is a count of DRBD's 512-byte sectors in bytes, saturating.
func sectorBytes(sectors uint64) int64 {
	return int64(min(sectors, math.MaxInt64/512) * 512)
}
