package monitor

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// pair is one VM's DRBDResources: the active Primary and the DR Secondary.
type pair struct{ act, rep *srv1alpha1.DRBDResource }

func newPair(vm string) pair {
	meta := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "apps", Name: srv1alpha1.DRBDResourceName(vm), CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour)),
			Labels: map[string]string{srv1alpha1.ProtectionGroupLabel: "pg"}}
	}
	act := &srv1alpha1.DRBDResource{ObjectMeta: meta(), Spec: srv1alpha1.DRBDResourceSpec{NodeName: "p",
		Volumes: []srv1alpha1.DRBDVolume{{Number: 0}}}}
	rep := &srv1alpha1.DRBDResource{ObjectMeta: meta(), Spec: srv1alpha1.DRBDResourceSpec{NodeName: "d",
		Volumes: []srv1alpha1.DRBDVolume{{Number: 0}}}}
	p := pair{act, rep}
	p.connect()
	return p
}

// connect puts both sides in sync.
func (p pair) connect() {
	p.act.Status = srv1alpha1.DRBDResourceStatus{ObservedGeneration: 1, Role: "Primary",
		Volumes: []srv1alpha1.DRBDVolumeStatus{{Number: 0, DiskState: "UpToDate"}},
		Peers: []srv1alpha1.DRBDPeerStatus{{NodeName: "d", ConnectionState: "Connected", PeerRole: "Secondary",
			Volumes: []srv1alpha1.DRBDPeerVolumeStatus{{Number: 0, ReplicationState: "Established", PeerDiskState: "UpToDate", PercentInSync: "100.00"}}}},
		Conditions: []metav1.Condition{{Type: srv1alpha1.ConditionConnected, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))}}}
	p.rep.Status = srv1alpha1.DRBDResourceStatus{ObservedGeneration: 1, Role: "Secondary",
		Volumes: []srv1alpha1.DRBDVolumeStatus{{Number: 0, DiskState: "UpToDate"}},
		Peers: []srv1alpha1.DRBDPeerStatus{{NodeName: "p", ConnectionState: "Connected", PeerRole: "Primary",
			Volumes: []srv1alpha1.DRBDPeerVolumeStatus{{Number: 0, ReplicationState: "Established", PeerDiskState: "UpToDate", PercentInSync: "100.00"}}}}}
}

// disconnect cuts the link at `at`, with oos bytes not yet replicated.
func (p pair) disconnect(at time.Time, oos int64) {
	p.act.Status.Peers[0].ConnectionState = "Connecting"
	p.act.Status.Peers[0].PeerRole = "Unknown"
	p.act.Status.Peers[0].Volumes[0] = srv1alpha1.DRBDPeerVolumeStatus{Number: 0, ReplicationState: "Off", PeerDiskState: "DUnknown", PercentInSync: "99.00", OutOfSyncBytes: oos}
	p.act.Status.Conditions[0] = metav1.Condition{Type: srv1alpha1.ConditionConnected, Status: metav1.ConditionFalse, LastTransitionTime: metav1.NewTime(at)}
	p.rep.Status.Peers[0].ConnectionState = "Connecting"
	p.rep.Status.Peers[0].PeerRole = "Unknown"
	p.rep.Status.Promotable = true
}

type world struct {
	group *srv1alpha1.ProtectionGroup
	pairs []pair
	st    srv1alpha1.ReplicationGroupStatusStatus
	event *srv1alpha1.RPOEvent
}

func newWorld(vms int) *world {
	w := &world{group: &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "dr", Name: "pg"}}}
	for i := range vms {
		name := fmt.Sprintf("vm-%02d", i)
		w.group.Spec.VirtualMachines = append(w.group.Spec.VirtualMachines, srv1alpha1.VirtualMachineReference{Namespace: "apps", Name: name})
		w.pairs = append(w.pairs, newPair(name))
	}
	return w
}

func (w *world) input(now time.Time) Input {
	act := Side{Cluster: "primary", Readable: true, Resources: map[types.NamespacedName]*srv1alpha1.DRBDResource{}}
	rep := Side{Cluster: "dr", Readable: true, Resources: map[types.NamespacedName]*srv1alpha1.DRBDResource{}}
	for _, p := range w.pairs {
		act.Resources[types.NamespacedName{Namespace: "apps", Name: p.act.Name}] = p.act
		rep.Resources[types.NamespacedName{Namespace: "apps", Name: p.rep.Name}] = p.rep
	}
	return Input{Group: w.group, Generation: 1, ObjectiveSeconds: 30, Previous: &w.st, Active: act, Replicas: []Side{rep}, Event: w.event, Now: now}
}

// eval aggregates and applies the output as the controller would.
func (w *world) eval(t *testing.T, now time.Time) Output {
	t.Helper()
	out := Aggregate(w.input(now))
	if out.Changed {
		w.st = out.Status
	}
	if ep := out.Episode; ep != nil {
		if ep.Action == EpisodeStart {
			w.event = &srv1alpha1.RPOEvent{ObjectMeta: metav1.ObjectMeta{Name: ep.Name}, Spec: ep.Spec}
		}
		require.Equal(t, ep.Name, w.event.Name)
		w.event.Status = ep.Status
	}
	return out
}

func TestInSyncIsHealthyAndStable(t *testing.T) {
	w := newWorld(3)
	out := w.eval(t, t0)
	require.True(t, out.Changed)
	require.Equal(t, srv1alpha1.HealthHealthy, w.st.Health)
	require.True(t, w.st.FailoverReady, "a Secondary UpToDate replica of a connected Primary is ready for a planned failover")
	require.Zero(t, w.st.MaxLagSeconds)
	require.Len(t, w.st.VirtualMachines, 3)
	v := w.st.VirtualMachines[0].Volumes[0]
	require.Equal(t, "Connected", v.ConnectionState)
	require.Equal(t, "UpToDate", v.PeerDiskState)
	require.Equal(t, "100.00", v.PercentInSync)
	require.True(t, v.LastInSyncTime.Time.Equal(t0))

	for i := 1; i <= 5; i++ {
		out = w.eval(t, t0.Add(time.Duration(i)*time.Minute))
		require.False(t, out.Changed, "nothing changed: no write")
		require.Nil(t, out.Episode)
		require.Nil(t, out.NextBreach)
	}
}

func TestLagEpisodeFromDisconnectToResync(t *testing.T) {
	w := newWorld(2)
	w.eval(t, t0)
	down := t0.Add(10 * time.Second)
	w.pairs[0].disconnect(down, 4096)

	out := w.eval(t, down.Add(2*time.Second))
	require.True(t, out.Changed)
	require.Equal(t, srv1alpha1.HealthDisconnected, w.st.Health)
	v := w.st.VirtualMachines[0].Volumes[0]
	require.True(t, v.LastInSyncTime.Time.Equal(down), "the link drop is the last moment in sync")
	require.EqualValues(t, 2, v.LagSeconds)
	require.Nil(t, out.Episode)
	require.NotNil(t, out.NextBreach)
	require.True(t, out.NextBreach.Equal(down.Add(31*time.Second)))
	require.False(t, w.st.FailoverReady, "the active side has unsent data")

	out = w.eval(t, down.Add(40*time.Second))
	require.NotNil(t, out.Episode)
	require.Equal(t, EpisodeStart, out.Episode.Action)
	require.True(t, out.Episode.Spec.StartTime.Time.Equal(down.Add(30*time.Second)), "start is when the lag exceeded the objective")
	require.EqualValues(t, 40, out.Episode.Status.PeakLagSeconds)
	require.Equal(t, []string{"apps/vm-00"}, out.Episode.Status.AffectedVMs)
	require.Contains(t, out.Episode.Status.Message, "replication link down: apps/vm-00 (Connecting)")
	require.Equal(t, out.Episode.Name, w.st.ActiveRPOEvent)
	name := out.Episode.Name

	out = w.eval(t, down.Add(60*time.Second))
	require.Equal(t, EpisodeUpdate, out.Episode.Action)
	require.EqualValues(t, 60, w.event.Status.PeakLagSeconds)

	// Reconnected and resynced: the episode ends with the lag it had until then.
	w.pairs[0].connect()
	out = w.eval(t, down.Add(75*time.Second))
	require.Equal(t, EpisodeEnd, out.Episode.Action)
	require.Equal(t, name, out.Episode.Name)
	require.Equal(t, srv1alpha1.RPOEventResolved, w.event.Status.State)
	require.EqualValues(t, 75, w.event.Status.PeakLagSeconds)
	require.True(t, w.event.Status.EndTime.Time.Equal(down.Add(75*time.Second)))
	require.Empty(t, w.st.ActiveRPOEvent)
	require.Zero(t, w.st.MaxLagSeconds)
	require.Equal(t, srv1alpha1.HealthHealthy, w.st.Health)

	out = w.eval(t, down.Add(90*time.Second))
	require.Nil(t, out.Episode)
	require.False(t, out.Changed)
}

func TestLagContinuesFromPersistedStatus(t *testing.T) {
	w := newWorld(1)
	w.eval(t, t0)
	w.pairs[0].disconnect(t0.Add(time.Second), 0)
	w.eval(t, t0.Add(5*time.Second))
	// A restarted monitor has only the stored status, with second precision.
	stored := w.st.DeepCopy()
	w2 := &world{group: w.group, pairs: w.pairs, st: *stored}
	w2.eval(t, t0.Add(101*time.Second))
	require.EqualValues(t, 100, w2.st.MaxLagSeconds)
}

func TestReplicaViewWhenActiveUnreadable(t *testing.T) {
	w := newWorld(1)
	in := w.input(t0)
	in.Active = Side{Cluster: "primary"}
	out := Aggregate(in)
	require.Equal(t, srv1alpha1.HealthHealthy, out.Status.Health, "the replica sees a connected Primary and is UpToDate")
	require.True(t, out.Status.FailoverReady)

	in.Replicas[0].Readable = false
	out = Aggregate(in)
	require.Equal(t, srv1alpha1.HealthUnknown, out.Status.Health)
	require.False(t, out.Status.FailoverReady)
}

func TestNeverInSyncCountsFromCreation(t *testing.T) {
	w := newWorld(1)
	p := w.pairs[0].act.Status.Peers[0].Volumes
	p[0].ReplicationState, p[0].PeerDiskState, p[0].PercentInSync, p[0].OutOfSyncBytes = "SyncSource", "Inconsistent", "10.00", 1<<20
	w.eval(t, t0)
	require.Equal(t, srv1alpha1.HealthSyncing, w.st.Health)
	require.EqualValues(t, 3600, w.st.MaxLagSeconds)
	require.Nil(t, w.st.VirtualMachines[0].Volumes[0].LastInSyncTime)
}

func secs(n int) time.Duration { return time.Duration(n) * time.Second }

func TestUnreadableClustersKeepTheLag(t *testing.T) {
	w := newWorld(1)
	w.eval(t, t0)
	w.pairs[0].disconnect(t0.Add(time.Second), 0)
	w.eval(t, t0.Add(5*time.Second))
	in := w.input(t0.Add(65 * time.Second))
	in.Active.Readable, in.Replicas[0].Readable = false, false
	out := Aggregate(in)
	require.Equal(t, srv1alpha1.HealthUnknown, out.Status.Health)
	v := out.Status.VirtualMachines[0].Volumes[0]
	require.True(t, v.LastInSyncTime.Time.Equal(t0.Add(time.Second)))
	require.EqualValues(t, 64, v.LagSeconds)
}
