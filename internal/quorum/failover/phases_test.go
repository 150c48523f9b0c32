package failover

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
	remotefake "github.com/siterecovery/siterecovery/internal/quorum/remote/fake"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/internal/workload/protectiongroup"
)

// The phases of a DRBD failover, one reconcile each, against in-memory
// clusters: the quorum cluster is a fake client, the workload clusters are
// remote/fake. Each case sets the request in a phase and the workload
// clusters in a state, reconciles once, and checks the request's status and
// what was written to each cluster.

const (
	testNS    = "dr"
	testZone  = "zone"
	testGroup = "g"
	appNS     = "apps"
	primary   = "primary"
	drCluster = "dr"
	vm        = "web"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

type cluster struct {
	objs  []client.Object
	state remote.State // Reachable if empty
	gone  bool         // never connected
}

type phaseCase struct {
	name string
	// request's type, phase and how long ago it entered it.
	typ   srv1alpha1.FailoverType
	phase srv1alpha1.FailoverPhase
	since time.Duration
	force bool

	primary, dr cluster
	// taintsUnreported: pg-controller has not yet reported the tainted
	// nodes in the group's status, as just after an agent set a taint.
	taintsUnreported bool

	wantPhase   srv1alpha1.FailoverPhase
	wantMessage string
	// wantConditions maps a condition type to "Status/Reason".
	wantConditions map[string]string
	wantEvents     []string
	check          func(t *testing.T, f *fixture)
}

type fixture struct {
	ctx    context.Context
	quorum client.Client
	remote *remotefake.ClusterCache
	events *record.FakeRecorder
	r      *Reconciler
	// taintsUnreported: see phaseCase.
	taintsUnreported bool
}

func key(cluster string) remote.Key {
	return remote.Key{Namespace: testNS, Zone: testZone, Cluster: cluster}
}

func newFixture(c phaseCase) *fixture {
	s := scheme.New()
	enteredAt := t0.Add(-c.since)
	fr := &srv1alpha1.FailoverRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "move", UID: "uid-1", Generation: 1},
		Spec: srv1alpha1.FailoverRequestSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: testGroup},
			TargetCluster: drCluster, FailoverType: c.typ, DrainTimeoutSeconds: 300, BatchBootTimeoutSeconds: 300, Force: c.force},
		Status: srv1alpha1.FailoverRequestStatus{Phase: c.phase, SourceCluster: primary, StartTime: &metav1.Time{Time: enteredAt},
			PhaseHistory: []srv1alpha1.PhaseTransition{
				{Phase: string(srv1alpha1.FailoverPending), Time: metav1.NewMicroTime(enteredAt)},
				{Phase: string(c.phase), Time: metav1.NewMicroTime(enteredAt)},
			}},
	}
	if c.typ == "" {
		fr.Spec.FailoverType = srv1alpha1.FailoverPlanned
	}
	if c.phase == srv1alpha1.FailoverWaitingForDRBD {
		// The drain budget counts from StoppingOnSource, entered as long ago.
		fr.Status.PhaseHistory = slices.Insert(fr.Status.PhaseHistory, 1,
			srv1alpha1.PhaseTransition{Phase: string(srv1alpha1.FailoverStoppingOnSource), Time: metav1.NewMicroTime(enteredAt)})
	}
	zone := &srv1alpha1.ProtectionZone{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: testZone},
		Spec: srv1alpha1.ProtectionZoneSpec{StorageBackend: srv1alpha1.BackendDRBD, Clusters: []srv1alpha1.ZoneCluster{
			{Name: primary, Role: srv1alpha1.ClusterRolePrimary}, {Name: drCluster, Role: srv1alpha1.ClusterRoleDR}}}}
	pg := &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: testGroup},
		Spec: srv1alpha1.ProtectionGroupSpec{ZoneRef: &srv1alpha1.LocalObjectReference{Name: testZone}, ActiveCluster: primary,
			VirtualMachines: []srv1alpha1.VirtualMachineReference{{Namespace: appNS, Name: vm}}}}
	f := &fixture{ctx: context.Background(), quorum: remotefake.NewClient(s, fr, zone, pg), remote: remotefake.New(s),
		events: record.NewFakeRecorder(32), taintsUnreported: c.taintsUnreported}
	for name, cl := range map[string]cluster{primary: c.primary, drCluster: c.dr} {
		if cl.gone {
			continue
		}
		f.remote.Add(key(name), cl.objs...)
		if cl.state != "" {
			f.remote.SetState(key(name), cl.state)
		}
	}
	f.r = &Reconciler{Client: f.quorum, Remote: f.remote, Recorder: f.events, Clock: clocktesting.NewFakeClock(t0),
		Metrics: defaultMetrics}
	return f
}

// reconcile runs one reconcile of the request between two passes of each
// workload cluster's pg-controller: the one before reports the group's
// replicas, the one after sets the DRBD role the request asked.
func (f *fixture) reconcile(t *testing.T) {
	t.Helper()
	f.pgControllers(t)
	_, err := f.r.Reconcile(f.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: testNS, Name: "move"}})
	require.NoError(t, err)
	f.pgControllers(t)
}

// pgControllers does, on each workload cluster, what its pg-controller does
// with the DRBD intent of each group (internal/workload/protectiongroup).
func (f *fixture) pgControllers(t *testing.T) {
	t.Helper()
	for _, name := range []string{primary, drCluster} {
		c := f.remote.Client(key(name))
		if c == nil {
			continue
		}
		groups := &srv1alpha1.ProtectionGroupList{}
		require.NoError(t, c.List(f.ctx, groups, client.InNamespace(testNS)))
		for i := range groups.Items {
			pg := &groups.Items[i]
			replicas, err := protectiongroup.Replicas(f.ctx, c, pg)
			require.NoError(t, err)
			// It demotes only once the group's VMs have stopped.
			held := pg.Spec.DRBD != nil && protectiongroup.Demotes(pg.Spec.DRBD, replicas) && pg.Status.CurrentState != srv1alpha1.StateStopped
			if pg.Spec.DRBD != nil && !held {
				_, err := protectiongroup.ApplyDRBDIntent(f.ctx, c, pg.Spec.DRBD, replicas)
				require.NoError(t, err)
			}
			tainted, err := protectiongroup.TaintedNodes(f.ctx, c, replicas)
			require.NoError(t, err)
			if f.taintsUnreported {
				tainted = nil
			}
			pg.Status.DRBD = protectiongroup.DRBDStatus(pg, replicas, tainted, pg.Spec.DRBD != nil)
			require.NoError(t, c.Status().Update(f.ctx, pg))
		}
	}
}

func (f *fixture) request(t *testing.T) *srv1alpha1.FailoverRequest {
	fr := &srv1alpha1.FailoverRequest{}
	require.NoError(t, f.quorum.Get(f.ctx, client.ObjectKey{Namespace: testNS, Name: "move"}, fr))
	return fr
}

func (f *fixture) get(t *testing.T, cluster string, obj client.Object, name string) {
	t.Helper()
	ns := appNS
	switch obj.(type) {
	case *srv1alpha1.ProtectionGroup:
		ns = testNS
	case *corev1.Node:
		ns = ""
	}
	require.NoError(t, f.remote.Client(key(cluster)).Get(f.ctx, client.ObjectKey{Namespace: ns, Name: name}, obj))
}

func (f *fixture) drbd(t *testing.T, cluster string) *srv1alpha1.DRBDResource {
	d := &srv1alpha1.DRBDResource{}
	f.get(t, cluster, d, srv1alpha1.DRBDResourceName(vm))
	return d
}

func (f *fixture) groupCopy(t *testing.T, cluster string) *srv1alpha1.ProtectionGroup {
	g := &srv1alpha1.ProtectionGroup{}
	f.get(t, cluster, g, testGroup)
	return g
}

// groupCopyIn is the workload copy of the group, in state (observed) after
// being asked for desired.
func groupCopyIn(name string, desired, state srv1alpha1.GroupState) *srv1alpha1.ProtectionGroup {
	return &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name, Generation: 1},
		Spec:   srv1alpha1.ProtectionGroupSpec{DesiredState: desired},
		Status: srv1alpha1.ProtectionGroupStatus{ObservedGeneration: 1, CurrentState: state}}
}

// unschedulable reports the group's VM ErrorUnschedulable, as pg-controller
// reports a VM whose launcher pod the scheduler cannot place.
func unschedulable(pg *srv1alpha1.ProtectionGroup) *srv1alpha1.ProtectionGroup {
	pg.Status.VirtualMachines = []srv1alpha1.VMStatus{{Namespace: appNS, Name: vm, PrintableStatus: "ErrorUnschedulable",
		Message: "cannot be scheduled: 0/3 nodes are available: 1 Insufficient memory, 2 node(s) had volume node affinity conflict"}}
	return pg
}

// replica is the VM's DRBDResource on node, with the role DRBD reports,
// connected and in sync with a Secondary peer.
func replica(node string, spec, role srv1alpha1.DRBDRole, promotable bool) *srv1alpha1.DRBDResource {
	return &srv1alpha1.DRBDResource{
		ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: srv1alpha1.DRBDResourceName(vm),
			Labels: map[string]string{srv1alpha1.ProtectionGroupLabel: testGroup}},
		Spec: srv1alpha1.DRBDResourceSpec{NodeName: node, Role: spec, Quorum: srv1alpha1.QuorumForRole(spec)},
		Status: srv1alpha1.DRBDResourceStatus{Role: string(role), Promotable: promotable, Peers: []srv1alpha1.DRBDPeerStatus{{
			NodeName: "peer", ConnectionState: "Connected", PeerRole: string(srv1alpha1.RoleSecondary),
			Volumes: []srv1alpha1.DRBDPeerVolumeStatus{{Number: 0}}}}},
	}
}

// cutOff makes a replica's peer on the primary cluster unreachable: DRBD
// tries to connect and does not. fenced lists it in spec.fencedPeers too.
func cutOff(r *srv1alpha1.DRBDResource, fenced bool) *srv1alpha1.DRBDResource {
	r.Spec.Peers = []srv1alpha1.DRBDPeer{{NodeName: "peer", Cluster: primary}}
	if fenced {
		r.Spec.FencedPeers = []string{"peer"}
	}
	r.Status.Peers[0].ConnectionState = "Connecting"
	r.Status.Peers[0].PeerRole = "Unknown"
	return r
}

// writingAlone is the source replica, Primary, whose peer is away while it
// writes on: oos is the figure its status carries, answering the request
// read if answered is its UID.
func writingAlone(oos int64, answered string) *srv1alpha1.DRBDResource {
	r := replica("node-a", pri, pri, false)
	r.Status.Peers[0].ConnectionState, r.Status.Peers[0].PeerRole = "Connecting", "Unknown"
	r.Status.Peers[0].Volumes[0].OutOfSyncBytes = oos
	r.Status.LastUpdateTime = &metav1.Time{Time: t0.Add(-time.Hour)}
	if answered != "" {
		r.Spec.StatusRequest, r.Status.StatusAnswered = answered, answered
		r.Status.StatusReadTime = &metav1.Time{Time: t0}
	}
	return r
}

// heldOpen is the source replica a planned failover asked to be Secondary
// and whose agent DRBD refused: the VM's disk is still open on the node.
func heldOpen() *srv1alpha1.DRBDResource {
	r := replica("node-a", sec, pri, false)
	r.Status.Conditions = []metav1.Condition{{Type: srv1alpha1.ConditionRoleApplied, Status: metav1.ConditionFalse,
		Reason: srv1alpha1.ReasonAdmFailed, Message: "drbdadm secondary failed: (-12) Device is held open by someone"}}
	return r
}

func node(name string, tainted bool) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if tainted {
		n.Spec.Taints = []corev1.Taint{{Key: srv1alpha1.LostQuorumTaintKey, Effect: corev1.TaintEffectNoSchedule}}
	}
	return n
}

func hasTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == srv1alpha1.LostQuorumTaintKey {
			return true
		}
	}
	return false
}

var (
	pri, sec                = srv1alpha1.RolePrimary, srv1alpha1.RoleSecondary
	running, stopped        = srv1alpha1.StateRunning, srv1alpha1.StateStopped
	sourceRunning           = []client.Object{groupCopyIn(testGroup, running, running), replica("node-a", pri, pri, false), node("node-a", false)}
	sourceStoppedSecondary  = []client.Object{groupCopyIn(testGroup, stopped, stopped), replica("node-a", sec, sec, false), node("node-a", false)}
	targetStoppedPromotable = []client.Object{groupCopyIn(testGroup, stopped, stopped), replica("node-b", sec, sec, true), node("node-b", false)}
)

func TestPhases(t *testing.T) {
	for _, c := range []phaseCase{
		// Stopping on the source.
		{
			name: "planned: asks the source to stop and waits for it", phase: srv1alpha1.FailoverStoppingOnSource,
			primary: cluster{objs: sourceRunning}, dr: cluster{objs: targetStoppedPromotable},
			wantPhase: srv1alpha1.FailoverStoppingOnSource, wantMessage: `waiting for group g to stop on primary (currentState "running")`,
			check: func(t *testing.T, f *fixture) {
				require.Equal(t, stopped, f.groupCopy(t, primary).Spec.DesiredState, "the source is asked to stop")
				require.Equal(t, pri, f.drbd(t, primary).Spec.Role, "nothing is demoted before the VMs stopped")
			},
		},
		{
			name: "planned: a stopped source moves on to demote DRBD there", phase: srv1alpha1.FailoverStoppingOnSource,
			primary:   cluster{objs: []client.Object{groupCopyIn(testGroup, stopped, stopped), replica("node-a", pri, pri, false)}},
			dr:        cluster{objs: targetStoppedPromotable},
			wantPhase: srv1alpha1.FailoverWaitingForDRBD, wantMessage: "waiting for DRBD on primary to become Secondary: vm-web",
			wantConditions: map[string]string{srv1alpha1.ConditionSourceStopped: "True/Stopped"},
			wantEvents:     []string{"Normal WaitingForDRBD group g stopped on primary; moving DRBD primary to dr"},
			check: func(t *testing.T, f *fixture) {
				d := f.drbd(t, primary)
				require.Equal(t, sec, d.Spec.Role, "the source replica is demoted")
				require.Equal(t, srv1alpha1.QuorumForRole(sec), d.Spec.Quorum, "and fenced by quorum in the same request")
				require.Equal(t, sec, f.drbd(t, drCluster).Spec.Role, "the target waits for the source to be Secondary")
			},
		},
		{
			name: "planned: VMs that do not stop in time fail the request and restart on the source", phase: srv1alpha1.FailoverStoppingOnSource,
			since:   10 * time.Minute,
			primary: cluster{objs: sourceRunning}, dr: cluster{objs: targetStoppedPromotable},
			wantPhase:      srv1alpha1.FailoverFailed,
			wantMessage:    "VMs of g did not stop on primary within drainTimeoutSeconds=300; nothing was promoted on dr and the group was asked to run on primary again",
			wantConditions: map[string]string{srv1alpha1.ConditionSourceStopped: "False/" + srv1alpha1.ReasonDrainTimeout, srv1alpha1.ConditionReady: "False/" + srv1alpha1.ReasonDrainTimeout},
			check: func(t *testing.T, f *fixture) {
				require.Equal(t, running, f.groupCopy(t, primary).Spec.DesiredState)
				require.Equal(t, sec, f.drbd(t, drCluster).Spec.Role, "nothing was promoted")
			},
		},
		{
			name: "unplanned: an unreachable source is not waited for; the target is force-promoted", typ: srv1alpha1.FailoverUnplanned,
			phase:     srv1alpha1.FailoverStoppingOnSource,
			primary:   cluster{objs: sourceRunning, state: remote.Unreachable},
			dr:        cluster{objs: []client.Object{groupCopyIn(testGroup, stopped, stopped), replica("node-b", sec, sec, false), node("node-b", false)}},
			wantPhase: srv1alpha1.FailoverWaitingForDRBD, wantMessage: "waiting for DRBD on dr to be promotable and promoted: apps/vm-web",
			wantConditions: map[string]string{srv1alpha1.ConditionSourceStopped: "Unknown/" + srv1alpha1.ReasonSourceUnreachable},
			check: func(t *testing.T, f *fixture) {
				d := f.drbd(t, drCluster)
				require.Equal(t, pri, d.Spec.Role)
				require.True(t, d.Spec.ForcePromotion, "a replica that is not promotable is forced in an unplanned failover")
				require.Equal(t, running, f.groupCopy(t, primary).Spec.DesiredState, "the unreachable source was not written")
			},
		},

		{
			name: "unplanned: a target cut off from a source that may still run fences it off before promoting", typ: srv1alpha1.FailoverUnplanned,
			phase:     srv1alpha1.FailoverWaitingForDRBD,
			primary:   cluster{objs: sourceRunning, state: remote.Unreachable},
			dr:        cluster{objs: []client.Object{groupCopyIn(testGroup, stopped, stopped), cutOff(replica("node-b", sec, sec, true), false), node("node-b", false)}},
			wantPhase: srv1alpha1.FailoverWaitingForDRBD,
			wantMessage: "DRBD on dr does not replicate from primary for vm-web: primary may still run its VMs, cut off, so dr fences it off (spec.fencedPeers) before promoting; " +
				"when primary returns, group g is stopped there and its replicas demoted, and its diverged writes are kept apart until a failback rejoins it",
			wantEvents: []string{"Warning SourceFencedOff DRBD on dr does not replicate from primary for vm-web: primary may still run its VMs, cut off, so dr fences it off (spec.fencedPeers) before promoting; " +
				"when primary returns, group g is stopped there and its replicas demoted, and its diverged writes are kept apart until a failback rejoins it"},
			check: func(t *testing.T, f *fixture) {
				d := f.drbd(t, drCluster)
				require.Equal(t, []string{"peer"}, d.Spec.FencedPeers, "the source is fenced off first")
				require.Equal(t, sec, d.Spec.Role, "and nothing is promoted in the same pass")
				pg := &srv1alpha1.ProtectionGroup{}
				require.NoError(t, f.quorum.Get(f.ctx, client.ObjectKey{Namespace: testNS, Name: testGroup}, pg))
				require.Equal(t, primary, pg.Annotations[srv1alpha1.FencedOffAnnotation], "the group records the source as fenced off, so that it is stood down on its return")
			},
		},
		{
			name: "unplanned: once the cut-off source is fenced off, the target is promoted", typ: srv1alpha1.FailoverUnplanned,
			phase:     srv1alpha1.FailoverWaitingForDRBD,
			primary:   cluster{objs: sourceRunning, state: remote.Unreachable},
			dr:        cluster{objs: []client.Object{groupCopyIn(testGroup, stopped, stopped), cutOff(replica("node-b", sec, sec, true), true), node("node-b", false)}},
			wantPhase: srv1alpha1.FailoverWaitingForDRBD, wantMessage: "waiting for DRBD on dr to be promotable and promoted: apps/vm-web",
			check: func(t *testing.T, f *fixture) { require.Equal(t, pri, f.drbd(t, drCluster).Spec.Role) },
		},
		{
			name: "unplanned: a source that answers is asked for DRBD's current figures before the promotion", typ: srv1alpha1.FailoverUnplanned,
			phase:     srv1alpha1.FailoverWaitingForDRBD,
			primary:   cluster{objs: []client.Object{groupCopyIn(testGroup, running, running), writingAlone(4096, ""), node("node-a", false)}},
			dr:        cluster{objs: []client.Object{groupCopyIn(testGroup, stopped, stopped), cutOff(replica("node-b", sec, sec, true), true), node("node-b", false)}},
			wantPhase: srv1alpha1.FailoverWaitingForDRBD, wantMessage: "reading DRBD's current out-of-sync figures on primary before promoting (0 of 1 replicas answered; at most 10s more)",
			check: func(t *testing.T, f *fixture) {
				require.Equal(t, "uid-1", f.drbd(t, primary).Spec.StatusRequest, "the source's agent is asked to read DRBD")
				require.Equal(t, sec, f.drbd(t, drCluster).Spec.Role, "nothing is promoted before the answer")
			},
		},
		{
			name: "unplanned: the figures read at promotion time are given", typ: srv1alpha1.FailoverUnplanned,
			phase:          srv1alpha1.FailoverWaitingForDRBD,
			primary:        cluster{objs: []client.Object{groupCopyIn(testGroup, running, running), writingAlone(256<<10, "uid-1"), node("node-a", false)}},
			dr:             cluster{objs: []client.Object{groupCopyIn(testGroup, stopped, stopped), cutOff(replica("node-b", sec, sec, true), true), node("node-b", false)}},
			wantPhase:      srv1alpha1.FailoverWaitingForDRBD,
			wantConditions: map[string]string{srv1alpha1.ConditionDataLossRisk: "True/" + srv1alpha1.ReasonLossRead},
			check: func(t *testing.T, f *fixture) {
				c := meta.FindStatusCondition(f.request(t).Status.Conditions, srv1alpha1.ConditionDataLossRisk)
				require.Contains(t, c.Message, "DRBD on primary, read at promotion time, has 262144 bytes out of sync across 1 replicas (vm-web 262144)")
				require.Equal(t, pri, f.drbd(t, drCluster).Spec.Role)
			},
		},
		{
			name: "unplanned: a source that does not answer in time is given with the time of its last figures", typ: srv1alpha1.FailoverUnplanned,
			phase: srv1alpha1.FailoverWaitingForDRBD, since: 11 * time.Second,
			primary:        cluster{objs: []client.Object{groupCopyIn(testGroup, running, running), writingAlone(4096, ""), node("node-a", false)}},
			dr:             cluster{objs: []client.Object{groupCopyIn(testGroup, stopped, stopped), cutOff(replica("node-b", sec, sec, true), true), node("node-b", false)}},
			wantPhase:      srv1alpha1.FailoverWaitingForDRBD,
			wantConditions: map[string]string{srv1alpha1.ConditionDataLossRisk: "True/" + srv1alpha1.ReasonLossLastReported},
			check: func(t *testing.T, f *fixture) {
				c := meta.FindStatusCondition(f.request(t).Status.Conditions, srv1alpha1.ConditionDataLossRisk)
				require.Contains(t, c.Message, "1 did not answer a reading within 10s (vm-web): their figures are the ones last reported, up to 2026-01-01T11:00:00Z, and writes since then are not counted")
				require.Equal(t, pri, f.drbd(t, drCluster).Spec.Role, "an unplanned failover does not wait longer")
			},
		},

		// Waiting for DRBD.
		{
			name: "planned: a demotion DRBD refuses says why and waits", phase: srv1alpha1.FailoverWaitingForDRBD,
			since:       time.Minute,
			primary:     cluster{objs: []client.Object{groupCopyIn(testGroup, stopped, stopped), heldOpen(), node("node-a", false)}},
			dr:          cluster{objs: targetStoppedPromotable},
			wantPhase:   srv1alpha1.FailoverWaitingForDRBD,
			wantMessage: "waiting for DRBD on primary to become Secondary: vm-web; refused: vm-web: drbdadm secondary failed: (-12) Device is held open by someone",
		},
		{
			name: "planned: a demotion refused past drainTimeoutSeconds fails safely and restarts the source", phase: srv1alpha1.FailoverWaitingForDRBD,
			since:     10 * time.Minute,
			primary:   cluster{objs: []client.Object{groupCopyIn(testGroup, stopped, stopped), heldOpen(), node("node-a", false)}},
			dr:        cluster{objs: targetStoppedPromotable},
			wantPhase: srv1alpha1.FailoverFailed,
			wantMessage: "DRBD on primary did not become Secondary within drainTimeoutSeconds=300 (waiting for DRBD on primary to become Secondary: vm-web; refused: vm-web: drbdadm secondary failed: (-12) Device is held open by someone); " +
				"nothing was promoted on dr and the group was asked to run on primary again",
			wantConditions: map[string]string{srv1alpha1.ConditionSourceStopped: "False/" + srv1alpha1.ReasonDrainTimeout, srv1alpha1.ConditionReady: "False/" + srv1alpha1.ReasonDrainTimeout},
			check: func(t *testing.T, f *fixture) {
				require.Equal(t, running, f.groupCopy(t, primary).Spec.DesiredState)
				require.Equal(t, pri, f.drbd(t, primary).Spec.Role, "the source is Primary again")
				require.Equal(t, sec, f.drbd(t, drCluster).Spec.Role, "nothing was promoted")
			},
		},
		{
			name: "taint conflict: another group runs on the target, so its lost-quorum taint stays", phase: srv1alpha1.FailoverWaitingForDRBD,
			primary: cluster{objs: sourceStoppedSecondary},
			dr: cluster{objs: []client.Object{groupCopyIn(testGroup, stopped, stopped), groupCopyIn("other", running, running),
				replica("node-b", sec, sec, true), node("node-b", true)}},
			wantPhase:      srv1alpha1.FailoverWaitingForDRBD,
			wantMessage:    "not removing drbd.linbit.com/lost-quorum from node-b on dr: no replica on node-b reports what it is kept for, and groups other run there; wait, or set force to remove it",
			wantConditions: map[string]string{srv1alpha1.ConditionTargetPromoted: "False/" + srv1alpha1.ReasonTaintConflict},
			check: func(t *testing.T, f *fixture) {
				n := &corev1.Node{}
				f.get(t, drCluster, n, "node-b")
				require.True(t, hasTaint(n), "the taint is kept")
				require.Equal(t, sec, f.drbd(t, drCluster).Spec.Role, "nothing is promoted while the taint holds")
			},
		},
		{
			name: "no taint: a promotable target is promoted", phase: srv1alpha1.FailoverWaitingForDRBD,
			primary: cluster{objs: sourceStoppedSecondary}, dr: cluster{objs: targetStoppedPromotable},
			wantPhase: srv1alpha1.FailoverWaitingForDRBD, wantMessage: "waiting for DRBD on dr to be promotable and promoted: apps/vm-web",
			check: func(t *testing.T, f *fixture) { require.Equal(t, pri, f.drbd(t, drCluster).Spec.Role) },
		},
		{
			name: "target not connected: waits for it", phase: srv1alpha1.FailoverWaitingForDRBD,
			primary: cluster{objs: sourceStoppedSecondary}, dr: cluster{gone: true},
			wantPhase: srv1alpha1.FailoverWaitingForDRBD, wantMessage: "cannot reach target dr yet: cluster not connected: dr has no connection (is it in the zone, with a valid kubeconfig Secret?)",
		},

		// Starting on the target.
		{
			name: "a promoted target is asked to run the group", phase: srv1alpha1.FailoverWaitingForDRBD,
			primary:   cluster{objs: sourceStoppedSecondary},
			dr:        cluster{objs: []client.Object{groupCopyIn(testGroup, stopped, stopped), replica("node-b", pri, pri, true), node("node-b", false)}},
			wantPhase: srv1alpha1.FailoverStartingOnTarget, wantMessage: `waiting for group g to run on dr (currentState "stopped")`,
			wantConditions: map[string]string{srv1alpha1.ConditionTargetPromoted: "True/Promoted"},
			wantEvents:     []string{"Normal StartingOnTarget DRBD primary on dr; starting group g there"},
			check: func(t *testing.T, f *fixture) {
				require.Equal(t, running, f.groupCopy(t, drCluster).Spec.DesiredState)
				require.Equal(t, stopped, f.groupCopy(t, primary).Spec.DesiredState, "the source stays stopped")
			},
		},
		{
			name: "a running target completes the request and becomes the active cluster", phase: srv1alpha1.FailoverStartingOnTarget,
			primary:   cluster{objs: sourceStoppedSecondary},
			dr:        cluster{objs: []client.Object{groupCopyIn(testGroup, running, running), replica("node-b", pri, pri, true)}},
			wantPhase: srv1alpha1.FailoverCompleted, wantMessage: "group g runs on dr; dr is now its active cluster",
			wantConditions: map[string]string{srv1alpha1.ConditionTargetRunning: "True/Running", srv1alpha1.ConditionReady: "True/FailoverCompleted"},
			check: func(t *testing.T, f *fixture) {
				pg := &srv1alpha1.ProtectionGroup{}
				require.NoError(t, f.quorum.Get(f.ctx, client.ObjectKey{Namespace: testNS, Name: testGroup}, pg))
				require.Equal(t, drCluster, pg.Spec.ActiveCluster)
				err := f.quorum.Get(f.ctx, client.ObjectKey{Namespace: testNS, Name: srv1alpha1.FailoverLockName(testGroup)}, &coordinationv1.Lease{})
				require.True(t, apierrors.IsNotFound(err), "the lock is released: %v", err)
			},
		},
		{
			name: "a VM the target's scheduler cannot place is named with the scheduler's reason", phase: srv1alpha1.FailoverStartingOnTarget,
			primary:     cluster{objs: sourceStoppedSecondary},
			dr:          cluster{objs: []client.Object{unschedulable(groupCopyIn(testGroup, running, srv1alpha1.StateStarting)), replica("node-b", pri, pri, true)}},
			wantPhase:   srv1alpha1.FailoverStartingOnTarget,
			wantMessage: `waiting for group g to run on dr (currentState "starting"); apps/web cannot be scheduled: 0/3 nodes are available: 1 Insufficient memory, 2 node(s) had volume node affinity conflict`,
		},
		{
			name: "an unreachable target is held for, saying so, with the source left stopped", phase: srv1alpha1.FailoverStartingOnTarget,
			primary:   cluster{objs: sourceStoppedSecondary},
			dr:        cluster{objs: []client.Object{groupCopyIn(testGroup, stopped, stopped), replica("node-b", pri, pri, true)}, state: remote.Unreachable},
			wantPhase: srv1alpha1.FailoverStartingOnTarget,
			check: func(t *testing.T, f *fixture) {
				msg := f.request(t).Status.Message
				for _, want := range []string{"cannot reach target dr: its API server has not answered since ", "(3 probes failed: ",
					"holding in StartingOnTarget: DRBD is Primary there; primary stays stopped; the request resumes when dr answers"} {
					require.Contains(t, msg, want)
				}
				require.Equal(t, stopped, f.groupCopy(t, primary).Spec.DesiredState)
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) { runPhaseCase(t, c) })
	}
}

// runPhaseCase runs one reconcile of c's request and checks what it wants.
func runPhaseCase(t *testing.T, c phaseCase) {
	f := newFixture(c)
	f.reconcile(t)
	fr := f.request(t)
	require.Equal(t, c.wantPhase, fr.Status.Phase, "message: %s", fr.Status.Message)
	if c.wantMessage != "" {
		require.Equal(t, c.wantMessage, fr.Status.Message)
	}
	for typ, want := range c.wantConditions {
		cond := meta.FindStatusCondition(fr.Status.Conditions, typ)
		require.NotNil(t, cond, "condition %s", typ)
		require.Equal(t, want, string(cond.Status)+"/"+cond.Reason, "condition %s: %s", typ, cond.Message)
	}
	close(f.events.Events)
	var events []string
	for e := range f.events.Events {
		events = append(events, e)
	}
	for _, want := range c.wantEvents {
		require.Contains(t, events, want)
	}
	if c.check != nil {
		c.check(t, f)
	}
}

// A write through a workload cluster wakes the active requests of its DR
// namespace: the controller's remote events, fed by the fake's writes.
func TestRemoteWritesWakeActiveRequests(t *testing.T) {
	f := newFixture(phaseCase{phase: srv1alpha1.FailoverWaitingForDRBD,
		primary: cluster{objs: sourceStoppedSecondary}, dr: cluster{objs: targetStoppedPromotable}})
	src := f.r.Remote.Source(ControllerName, remote.Events{Kinds: []remote.Kind{
		{Object: &srv1alpha1.DRBDResource{}, Map: f.r.activeRequestsOfRemote}}})
	q := newTestQueue(t, src)
	d := f.drbd(t, drCluster)
	d.Status.Role = string(pri)
	require.NoError(t, f.remote.Client(key(drCluster)).Status().Update(f.ctx, d))
	require.Equal(t, "move", q.next(t).Name)
}
