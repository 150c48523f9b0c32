package protectiongroup

import (
	"time"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// A group in transition (its currentState is not yet its desiredState) holds
// its status write for settleWait after this controller asked its VMs or
// replicas to change (flow.Settle). The window opens at the end of the
// reconcile that asked, when its last ask went out. The answers usually come
// within that time (KubeVirt deleting or creating the instances, the agents
// reporting the new role), and each wakes the group: the status then goes out
// once, in the state they lead to, instead of once per step on the way
// (stopping, then stopped). A group that reaches its desired state is written
// at once, whatever the window: the quorum tier waits on exactly that write. A
// write is never held longer than longestSettle, so a controller that keeps
// asking (a fight with another writer of the VMs) still reports its group at
// least that often.
const (
	settleWait    = 200 * time.Millisecond
	longestSettle = time.Second
)

// inTransition reports whether the group's state has not reached what its
// spec asks.
func inTransition(g *srv1alpha1.ProtectionGroup) bool {
	return g.Spec.DesiredState != "" && g.Status.CurrentState != g.Spec.DesiredState
}
