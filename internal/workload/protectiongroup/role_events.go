package protectiongroup

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// ReasonReplicaRolesChanged is the event a group records once all its
// replicas on the cluster have reached one DRBD role. It replaces one event
// per replica: a failover step of N VMs records one event per group and
// cluster, and the per-replica roles stay readable in status.drbd.replicas.
const ReasonReplicaRolesChanged = "ReplicaRolesChanged"

// commonRole is the DRBD role every replica of st reports, or "" when they
// differ, some have not reported, or there are none.
func commonRole(st *srv1alpha1.GroupDRBDStatus) string {
	if st == nil || len(st.Replicas) == 0 {
		return ""
	}
	role := st.Replicas[0].Role
	for _, r := range st.Replicas[1:] {
		if r.Role != role {
			return ""
		}
	}
	return role
}

// recordRoleTransition records ReasonReplicaRolesChanged when the group's
// replicas have come to share a role other than the one they shared before.
func (r *Reconciler) recordRoleTransition(s *scope) {
	from, to := commonRole(s.before.Status.DRBD), commonRole(s.group.Status.DRBD)
	if to == "" || to == from {
		return
	}
	was := ""
	if from != "" {
		was = fmt.Sprintf(" (were %s)", from)
	}
	r.Recorder.Eventf(s.group, corev1.EventTypeNormal, ReasonReplicaRolesChanged,
		"all %d replicas on this cluster are %s%s", len(s.group.Status.DRBD.Replicas), to, was)
}
