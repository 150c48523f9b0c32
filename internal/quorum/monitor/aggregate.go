package monitor

import (
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// Side is one workload cluster's DRBDResources of a group, by namespace/name.
type Side struct {
	Cluster string
	// Readable is false when the cluster's cache could not be read; its
	// resources are then unknown rather than missing.
	Readable  bool
	Resources map[types.NamespacedName]*srv1alpha1.DRBDResource
}

func (s *Side) get(key types.NamespacedName) *srv1alpha1.DRBDResource {
	if s == nil || !s.Readable {
		return nil
	}
	return s.Resources[key]
}

// Input is everything one evaluation of a group depends on.
type Input struct {
	// Group is the quorum copy of the ProtectionGroup; its VMs are the rows.
	Group *srv1alpha1.ProtectionGroup
	// Generation is the ReplicationGroupStatus' generation.
	Generation int64
	// ObjectiveSeconds is the effective RPO objective.
	ObjectiveSeconds int32
	// Previous is the current status, whose timestamps carry lag across restarts.
	Previous *srv1alpha1.ReplicationGroupStatusStatus
	// Active is the group's active cluster; Replicas the other zone clusters.
	Active   Side
	Replicas []Side
	// Event is the RPOEvent named by Previous.ActiveRPOEvent, when it exists.
	Event *srv1alpha1.RPOEvent
	Now   time.Time
}

// Output is the new status, the RPO episode transition to apply, and when the
// lag of a volume will next cross the objective.
type Output struct {
	Status     srv1alpha1.ReplicationGroupStatusStatus
	Episode    *Episode
	NextBreach *time.Time
	// Changed reports whether Status differs from Input.Previous.
	Changed bool
}

// Aggregate computes a group's replication status. It is pure: the same input
// gives the same output, and an unchanged world gives Changed == false.
func Aggregate(in Input) Output {
	now := in.Now.Truncate(time.Second)
	prev := in.Previous
	if prev == nil {
		prev = &srv1alpha1.ReplicationGroupStatusStatus{}
	}
	prevVolumes := indexPrevious(prev)
	st := srv1alpha1.ReplicationGroupStatusStatus{
		ObservedGeneration: in.Generation,
		Health:             srv1alpha1.HealthHealthy,
		FailoverReady:      len(in.Group.Spec.VirtualMachines) > 0,
		ActiveRPOEvent:     prev.ActiveRPOEvent,
		Conditions:         append([]metav1.Condition(nil), prev.Conditions...),
	}
	if len(in.Group.Spec.VirtualMachines) == 0 {
		st.Health = srv1alpha1.HealthUnknown
	}
	objective := time.Duration(in.ObjectiveSeconds) * time.Second
	var next *time.Time
	lags := make([]vmLag, 0, len(in.Group.Spec.VirtualMachines))
	for _, ref := range in.Group.Spec.VirtualMachines {
		key := types.NamespacedName{Namespace: ref.Namespace, Name: srv1alpha1.DRBDResourceName(ref.Name)}
		act := in.Active.get(key)
		rep := replicaOf(in.Replicas, key)
		vm := srv1alpha1.VMReplicationState{Name: ref.Name, Namespace: ref.Namespace, DRBDResource: key.Name}
		vm.FailoverReady = failoverReady(act, rep, in.Active.Readable)
		vmHealth := srv1alpha1.HealthHealthy
		var worst vmLag
		var regained int64
		for _, n := range volumeNumbers(act, rep, prevVolumes, ref) {
			view := viewVolume(act, rep, n)
			p := prevVolumes[volumeKey{ref.Namespace, ref.Name, n}]
			base := applyLag(&view, p, created(act, rep), now)
			vm.Volumes = append(vm.Volumes, view.state)
			vmHealth = worse(vmHealth, view.health)
			if base != nil {
				if at := base.Add(objective + time.Second); at.After(now) && (next == nil || at.Before(*next)) {
					next = &at
				}
			}
			regained = max(regained, regainedLag(p, &view.state, now))
			if view.state.LagSeconds > worst.lag || worst.vm == "" {
				worst = vmLag{vm: ref.Namespace + "/" + ref.Name, lag: view.state.LagSeconds, base: base, conn: view.state.ConnectionState}
			}
		}
		worst.regained = regained
		if len(vm.Volumes) == 0 {
			vmHealth = srv1alpha1.HealthUnknown
		}
		st.Health = worse(st.Health, vmHealth)
		st.FailoverReady = st.FailoverReady && vm.FailoverReady
		st.MaxLagSeconds = max(st.MaxLagSeconds, worst.lag)
		lags = append(lags, worst)
		st.VirtualMachines = append(st.VirtualMachines, vm)
	}
	sort.Slice(st.VirtualMachines, func(i, j int) bool {
		a, b := st.VirtualMachines[i], st.VirtualMachines[j]
		return a.Namespace < b.Namespace || (a.Namespace == b.Namespace && a.Name < b.Name)
	})

	ep := episode(in, &st, lags, now)
	setConditions(&st, in.ObjectiveSeconds, in.Generation, now)
	return output(prev, st, ep, next, now)
}

// vmLag is a VM's worst volume, for RPO episodes.
type vmLag struct {
	vm   string
	lag  int64
	base *time.Time
	conn string
	// regained is the lag a volume had when it was just found in sync again.
	regained int64
}

// applyLag sets the volume's lag and lastInSyncTime from its view and previous
// state (see VolumeReplicationState), and returns the moment the lag counts
// from, or nil while in sync.
func applyLag(v *volumeView, prev *srv1alpha1.VolumeReplicationState, created *time.Time, now time.Time) *time.Time {
	s := &v.state
	if inSync(s) {
		s.LagSeconds = 0
		if prev != nil && inSync(prev) && prev.LastInSyncTime != nil {
			s.LastInSyncTime = prev.LastInSyncTime
		} else {
			s.LastInSyncTime = &metav1.Time{Time: now}
		}
		return nil
	}
	switch {
	case prev != nil && inSync(prev):
		// It just left sync: the link drop, when the agent saw it after the
		// volume regained sync, is the last moment it was known in sync.
		left := now
		if d := v.linkDownSince; d != nil && !d.After(now) && (prev.LastInSyncTime == nil || d.After(prev.LastInSyncTime.Time)) {
			left = d.Truncate(time.Second)
		}
		s.LastInSyncTime = &metav1.Time{Time: left}
	case prev != nil:
		s.LastInSyncTime = prev.LastInSyncTime
	case v.linkDownSince != nil && !v.linkDownSince.After(now):
		// First seen with the link down: it was in sync no later than the drop.
		s.LastInSyncTime = &metav1.Time{Time: v.linkDownSince.Truncate(time.Second)}
	}
	base := now
	switch {
	case s.LastInSyncTime != nil:
		base = s.LastInSyncTime.Time
	case created != nil && !created.After(now):
		// Never seen in sync: the replica lacks what was written since creation.
		base = *created
	}
	s.LagSeconds = max(0, int64(now.Sub(base)/time.Second))
	return &base
}

// regainedLag is the lag a volume had until it was just found in sync again:
// the time since it was last known in sync before.
func regainedLag(prev, cur *srv1alpha1.VolumeReplicationState, now time.Time) int64 {
	if prev == nil || inSync(prev) || !inSync(cur) || prev.LastInSyncTime == nil {
		return 0
	}
	return max(prev.LagSeconds, int64(now.Sub(prev.LastInSyncTime.Time)/time.Second))
}

// failoverReady: the replica is UpToDate everywhere and promotable, or only its
// connected Primary peer stands in the way (a planned failover demotes it
// first); and the active side, when readable, sees nothing missing.
func failoverReady(act, rep *srv1alpha1.DRBDResource, activeReadable bool) bool {
	if !reported(rep) || len(rep.Status.Volumes) == 0 {
		return false
	}
	for _, v := range rep.Status.Volumes {
		if v.DiskState != diskUpToDate {
			return false
		}
	}
	if !rep.Status.Promotable {
		p := peerOf(rep, act)
		if p == nil || p.ConnectionState != connConnected || p.PeerRole != string(srv1alpha1.RolePrimary) {
			return false
		}
	}
	if activeReadable && reported(act) {
		peer := peerOf(act, rep)
		if peer == nil || !allPeerVolumesInSync(peer) {
			return false
		}
	}
	return true
}

func allPeerVolumesInSync(p *srv1alpha1.DRBDPeerStatus) bool {
	for _, v := range p.Volumes {
		if v.PeerDiskState != diskUpToDate || v.OutOfSyncBytes != 0 {
			return false
		}
	}
	return true
}

func replicaOf(sides []Side, key types.NamespacedName) *srv1alpha1.DRBDResource {
	for i := range sides {
		if r := sides[i].get(key); r != nil {
			return r
		}
	}
	return nil
}

// volumeNumbers are the volumes of the VM's spec, from the active side when it
// is known; with neither side readable, the volumes of the previous status, so
// that their lastInSyncTime and lag carry on.
func volumeNumbers(act, rep *srv1alpha1.DRBDResource, prev map[volumeKey]*srv1alpha1.VolumeReplicationState, ref srv1alpha1.VirtualMachineReference) []int32 {
	src := act
	if src == nil {
		src = rep
	}
	var out []int32
	if src != nil {
		for _, v := range src.Spec.Volumes {
			out = append(out, v.Number)
		}
	} else {
		for k := range prev {
			if k.namespace == ref.Namespace && k.vm == ref.Name {
				out = append(out, k.volume)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func created(act, rep *srv1alpha1.DRBDResource) *time.Time {
	for _, r := range []*srv1alpha1.DRBDResource{act, rep} {
		if r != nil && !r.CreationTimestamp.IsZero() {
			t := r.CreationTimestamp.Time
			return &t
		}
	}
	return nil
}

type volumeKey struct {
	namespace, vm string
	volume        int32
}

func indexPrevious(st *srv1alpha1.ReplicationGroupStatusStatus) map[volumeKey]*srv1alpha1.VolumeReplicationState {
	out := make(map[volumeKey]*srv1alpha1.VolumeReplicationState, len(st.VirtualMachines))
	for i := range st.VirtualMachines {
		vm := &st.VirtualMachines[i]
		for j := range vm.Volumes {
			out[volumeKey{vm.Namespace, vm.Name, vm.Volumes[j].Volume}] = &vm.Volumes[j]
		}
	}
	return out
}

// Condition types and reasons of a ReplicationGroupStatus.
const (
	ConditionRPOMet   = "RPOMet"
	ReasonWithinRPO   = "WithinObjective"
	ReasonRPOBreached = "RPOBreached"
)

func setConditions(st *srv1alpha1.ReplicationGroupStatusStatus, objective int32, gen int64, now time.Time) {
	ready := metav1.Condition{Type: srv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: string(st.Health),
		Message: "every volume is connected, in sync and UpToDate", ObservedGeneration: gen, LastTransitionTime: metav1.NewTime(now)}
	if st.Health != srv1alpha1.HealthHealthy {
		ready.Status = metav1.ConditionFalse
		ready.Message = fmt.Sprintf("replication is %s", st.Health)
	}
	meta.SetStatusCondition(&st.Conditions, ready)
	rpo := metav1.Condition{Type: ConditionRPOMet, Status: metav1.ConditionTrue, Reason: ReasonWithinRPO,
		Message: fmt.Sprintf("lag is within the objective of %ds", objective), ObservedGeneration: gen, LastTransitionTime: metav1.NewTime(now)}
	if st.MaxLagSeconds > int64(objective) {
		rpo.Status, rpo.Reason = metav1.ConditionFalse, ReasonRPOBreached
		rpo.Message = fmt.Sprintf("lag exceeds the objective of %ds", objective)
	}
	meta.SetStatusCondition(&st.Conditions, rpo)
}

// output is what an aggregation returns: the new status, stamped with now
// only when it differs from prev, so that an unchanged group is not written.
func output(prev *srv1alpha1.ReplicationGroupStatusStatus, st srv1alpha1.ReplicationGroupStatusStatus, ep *Episode, next *time.Time, now time.Time) Output {
	// Replication that is not Healthy is Reconciling: it heals on its own or
	// is a disaster the group's conditions and RPOEvents tell of; nothing the
	// monitor computes waits for the operator.
	flow.DeriveKStatus(&st.Conditions, st.ObservedGeneration, false)
	out := Output{Status: st, Episode: ep, NextBreach: next}
	out.Changed = statusChanged(prev, &out.Status)
	if out.Changed {
		out.Status.LastUpdateTime = &metav1.Time{Time: now}
	} else {
		out.Status.LastUpdateTime = prev.LastUpdateTime
	}
	return out
}
