package pgsync

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// setStatus computes status.clusters and the Synced condition from the scope;
// it only reads the scope. A pass that changed nothing produces the status it
// read, so that it writes nothing.
func setStatus(s *scope) {
	switch {
	case s.specErr != nil:
		setSynced(s, metav1.ConditionFalse, flow.ReasonOf(s.specErr, srv1alpha1.ReasonInvalidSpec), s.specErr.Error())
	case s.zone == nil:
		// The zone could not be read (a transient quorum error): keep the status.
	default:
		s.group.Status.Clusters = clusterStates(s)
		s.group.Status.Companions = companionStatuses(s)
		setLastPoint(s)
		setSyncedFromClusters(s)
	}
	if s.specErr != nil || s.zone != nil {
		// Ready follows Synced: every workload copy matches this one. A
		// cluster that does not answer, or drift being fixed, is Reconciling;
		// a spec that cannot be synced is Stalled.
		s.group.Status.ObservedGeneration = s.group.Generation
		flow.ReadyFrom(&s.group.Status.Conditions, s.group.Generation, srv1alpha1.ConditionSynced, s.specErr)
	}
}

func clusterStates(s *scope) []srv1alpha1.ClusterGroupState {
	out := make([]srv1alpha1.ClusterGroupState, 0, len(s.clusters))
	for _, c := range s.clusters {
		st := srv1alpha1.ClusterGroupState{Cluster: c.name, CurrentState: c.currentState, InSync: c.inSync(), Message: clusterMessage(c),
			VirtualMachines: c.vms}
		prev := previousState(s.before, c.name)
		// lastSyncTime moves only when pg-sync wrote to the cluster, or confirmed
		// it and inSync flipped; an unreachable cluster keeps its last one.
		switch {
		case c.err == nil && (c.wrote || prev == nil || prev.LastSyncTime == nil || prev.InSync != st.InSync):
			st.LastSyncTime = &metav1.Time{Time: s.now}
		case prev != nil:
			st.LastSyncTime = prev.LastSyncTime
		}
		out = append(out, st)
	}
	return out
}

func clusterMessage(c clusterResult) string {
	switch {
	case c.err != nil:
		return c.err.Error()
	case len(c.drift) > 0:
		return "drift: " + strings.Join(c.drift, "; ")
	default:
		return ""
	}
}

func previousState(g *srv1alpha1.ProtectionGroup, cluster string) *srv1alpha1.ClusterGroupState {
	for i := range g.Status.Clusters {
		if g.Status.Clusters[i].Cluster == cluster {
			return &g.Status.Clusters[i]
		}
	}
	return nil
}

// setSyncedFromClusters sets Synced True when every cluster is in sync, else
// False with the reason of the first cluster that could not be synced, or Drift.
func setSyncedFromClusters(s *scope) {
	reason := ""
	var problems []string
	for _, c := range s.clusters {
		if c.inSync() {
			continue
		}
		if reason == "" && c.err != nil {
			reason = c.reason
		}
		problems = append(problems, fmt.Sprintf("%s: %s", c.name, clusterMessage(c)))
	}
	if len(problems) == 0 {
		setSynced(s, metav1.ConditionTrue, srv1alpha1.ReasonInSync, fmt.Sprintf("%d clusters in sync", len(s.clusters)))
		return
	}
	if reason == "" {
		reason = srv1alpha1.ReasonDrift
	}
	setSynced(s, metav1.ConditionFalse, reason, strings.Join(problems, "; "))
}

func setSynced(s *scope, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&s.group.Status.Conditions, metav1.Condition{
		Type: srv1alpha1.ConditionSynced, Status: status, Reason: reason, Message: message,
		ObservedGeneration: s.group.Generation,
	})
}
