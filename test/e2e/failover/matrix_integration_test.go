package failover_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/setup"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/faultmatrix"
	drbdsim "github.com/siterecovery/siterecovery/test/sim/drbd"
)

// TestFaultMatrix runs the cells of the fault matrix (matrix_cells_test.go)
// that this run covers. Each cell moves the group with one flow, injects one
// fault the moment the request enters one phase, holds it, heals it, and
// checks what a user sees: the request never waits silently while the fault
// lasts, then completes with the group running on its target; and, over the
// whole run, no VM ran on two clusters and no two DRBD Primaries were
// connected.
func TestFaultMatrix(t *testing.T) {
	// Every cell is validated: a nil filter draws from the whole matrix.
	cells, seed := faultmatrix.Pick(allCells(), nil, ciCells)
	faultmatrix.Announce(t, cells, seed)
	var results []cellResult
	for i, plan := range zonePlans(cells) {
		t.Run(fmt.Sprintf("zone-%d", i), func(t *testing.T) {
			m := newMatrixZone(t)
			for _, c := range plan {
				results = append(results, m.run(c))
			}
		})
	}
	t.Log("\n" + matrixTable(results))
}

// matrixZone is a zone the matrix runs cells on, one after the other.
type matrixZone struct {
	*zone
	vmis      *faultmatrix.VMIs
	primaries *drbdsim.Primaries
	seq       int
	// lost is the site an unplanned cell lost; nothing runs after it.
	lost string
}

const (
	matrixVMDelay = 1500 * time.Millisecond
	// matrixRecovery bounds how long a flow may take to finish once its fault
	// is healed.
	matrixRecovery = 2 * time.Minute
)

// newMatrixZone starts a zone with what the faults need: a latency proxy in
// front of each API server, and quorum-manager on a clock a fault jumps.
func newMatrixZone(t *testing.T) *matrixZone {
	o := zoneOptions{vms: 2, vmStartDelay: matrixVMDelay, vmStopDelay: matrixVMDelay, latency: true,
		quorum: setup.QuorumOptions{Clock: &env.SteppedClock{}}}
	z := newZone(t, o)
	m := &matrixZone{zone: z}
	m.vmis = z.recordVMIsThroughOutages()
	m.primaries = z.DRBD(t).WatchPrimaries(t)
	t.Cleanup(func() {
		require.Empty(t, m.vmis.Overlaps(), "a VM ran on two clusters at once")
		require.Empty(t, m.primaries.Violations(), "two DRBD Primaries were connected")
		require.Positive(t, m.primaries.Changes(), "the DRBD recorder saw the run")
	})
	return m
}

// cellResult is what one cell showed, for the table.
type cellResult struct {
	cell   cell
	landed srv1alpha1.FailoverPhase // the phase the fault landed in
	held   string                   // what the request said while the fault lasted
	phase  srv1alpha1.FailoverPhase
	reason string
	// recovery is from the heal to the request's end.
	recovery time.Duration
}

func (m *matrixZone) run(c cell) cellResult {
	t := m.t
	source := m.active()
	if want := map[flowKind]string{flowFailover: env.Primary, flowFailback: env.DR}[c.flow]; want != "" && want != source {
		m.move(source, want) // unfaulted: the cell starts where its flow does
		source = want
	}
	target := other(source)
	typ := srv1alpha1.FailoverPlanned
	if c.flow == flowUnplanned {
		typ = srv1alpha1.FailoverUnplanned
		m.loseSite(source)
	}
	m.seq++
	name := fmt.Sprintf("cell-%02d", m.seq)
	t.Logf("cell %s: %s as %s from %s to %s", name, c, typ, source, target)
	m.failover(name, target, typ)

	res := cellResult{cell: c}
	fr := m.untilPhase(name, c.phase)
	res.landed = fr.Status.Phase
	cluster := c.fault.Cluster(source, target)
	c.fault.Inject(t, m.Env, m.procs, cluster)
	res.held = m.holdWatching(name, c, target)
	c.fault.Heal(t, m.Env, m.procs, cluster)
	healed := time.Now()
	fr = m.untilEnd(name)
	res.recovery = time.Since(healed).Round(100 * time.Millisecond)
	res.phase, res.reason = fr.Status.Phase, readyReason(fr)

	require.Equal(t, srv1alpha1.FailoverCompleted, fr.Status.Phase, "cell %s: %s", c, fr.Status.Message)
	m.assertActive(target)
	for _, vm := range m.vms {
		m.waitDRBD(target, vm, "Primary", func(r *srv1alpha1.DRBDResource) bool { return r.Status.Role == "Primary" })
	}
	if typ == srv1alpha1.FailoverPlanned {
		m.waitGroup(source, srv1alpha1.StateStopped)
		for _, vm := range m.vms {
			m.waitDRBD(source, vm, "Secondary and connected", func(r *srv1alpha1.DRBDResource) bool {
				return r.Status.Role == "Secondary" && len(r.Status.Peers) == 1 && r.Status.Peers[0].ConnectionState == "Connected"
			})
		}
	}
	m.assertLockReleased()
	return res
}

// active is the group's active cluster on the quorum cluster.
func (m *matrixZone) active() string {
	pg := &srv1alpha1.ProtectionGroup{}
	require.NoError(m.t, m.Client(env.Quorum).Get(m.ctx, client.ObjectKey{Namespace: env.Namespace, Name: group}, pg))
	return pg.Spec.ActiveCluster
}

func other(cluster string) string {
	if cluster == env.Primary {
		return env.DR
	}
	return env.Primary
}

// move fails the group over without a fault.
func (m *matrixZone) move(from, to string) {
	m.seq++
	name := fmt.Sprintf("move-%02d", m.seq)
	m.waitPhase(m.failover(name, to, srv1alpha1.FailoverPlanned), srv1alpha1.FailoverCompleted)
	m.assertActive(to)
	m.waitGroup(from, srv1alpha1.StateStopped)
	m.assertLockReleased()
}

// loseSite takes a whole site away for an unplanned cell: its API server and
// its replication links go, and its VMs stop running with it.
func (m *matrixZone) loseSite(cluster string) {
	require.Empty(m.t, m.lost, "one site loss per zone")
	m.lost = cluster
	require.NoError(m.t, m.DRBD(m.t).CutLinks())
	require.NoError(m.t, m.Clusters[cluster].StopAPIServer())
	m.vmis.SiteLost(cluster)
}

// untilPhase polls the request until it enters phase or goes past it, and
// returns it as last seen.
func (m *matrixZone) untilPhase(name string, phase srv1alpha1.FailoverPhase) *srv1alpha1.FailoverRequest {
	var fr *srv1alpha1.FailoverRequest
	env.Eventually(m.t, matrixRecovery, name+" entering "+string(phase), func() error {
		fr = m.request(name)
		if fr.Status.Phase == phase || phaseIndex(fr.Status.Phase) > phaseIndex(phase) {
			return nil
		}
		return errPending
	})
	return fr
}

func phaseIndex(p srv1alpha1.FailoverPhase) int {
	if p == "" {
		return -1 // not picked up yet
	}
	for i, q := range fullTrail {
		if q == string(p) {
			return i
		}
	}
	return len(fullTrail) // Failed
}

// holdWatching lets the fault last faultHold while reading the request as a
// user would: while it is not finished, it must say what it waits for. It
// returns the last message seen. A stopped quorum API server shows nothing to
// anyone, so there is nothing to read then.
//
// A stopped target API server past the promotion must be named, which takes
// the prober's failure threshold and a reconcile: on a loaded machine that
// can take longer than faultHold, so that fault lasts until the request has
// named the target, or faultHold+matrixNaming at most.
func (m *matrixZone) holdWatching(name string, c cell, target string) string {
	var last string
	namedTarget := false
	mustName := c.fault.Name == faultmatrix.APIStopped(faultmatrix.Target).Name && phaseIndex(c.phase) >= phaseIndex(srv1alpha1.FailoverWaitingForDRBD)
	end, deadline := time.Now().Add(faultHold), time.Now().Add(faultHold+matrixNaming)
	for ; time.Now().Before(end) || (mustName && !namedTarget && time.Now().Before(deadline)); time.Sleep(200 * time.Millisecond) {
		fr := &srv1alpha1.FailoverRequest{}
		if err := m.Client(env.Quorum).Get(m.ctx, client.ObjectKey{Namespace: env.Namespace, Name: name}, fr); err != nil {
			continue
		}
		if terminal(fr.Status.Phase) {
			return fr.Status.Message
		}
		ready := meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionReady)
		require.NotEmpty(m.t, fr.Status.Message, "cell %s: request %s waits in %s without saying why", c, name, fr.Status.Phase)
		require.NotNil(m.t, ready, "cell %s: request %s has no Ready condition in %s", c, name, fr.Status.Phase)
		require.NotEmpty(m.t, ready.Reason)
		last = fr.Status.Message
		namedTarget = namedTarget || strings.Contains(last, "target "+target)
	}
	if mustName {
		require.True(m.t, namedTarget, "cell %s: while the target's API server is down the request says it waits for it; last said: %s", c, last)
	}
	return last
}

func terminal(p srv1alpha1.FailoverPhase) bool {
	return p == srv1alpha1.FailoverCompleted || p == srv1alpha1.FailoverFailed
}

// untilEnd waits for the request to finish.
func (m *matrixZone) untilEnd(name string) *srv1alpha1.FailoverRequest {
	var fr *srv1alpha1.FailoverRequest
	env.Eventually(m.t, matrixRecovery, name+" finishing", func() error {
		fr = &srv1alpha1.FailoverRequest{}
		if err := m.Client(env.Quorum).Get(m.ctx, client.ObjectKey{Namespace: env.Namespace, Name: name}, fr); err != nil {
			return err
		}
		if !terminal(fr.Status.Phase) {
			return fmt.Errorf("phase %s: %s", fr.Status.Phase, fr.Status.Message)
		}
		return nil
	})
	return fr
}

// matrixTable renders the results as a Markdown table: flow × fault × phase →
// outcome.
func matrixTable(results []cellResult) string {
	var b strings.Builder
	b.WriteString("| flow | fault | injected in | landed in | while it lasted, the request said | outcome | recovery after heal |\n|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		held := r.held
		if len(held) > 110 {
			held = held[:110] + "…"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s (%s) | %s |\n", r.cell.flow, r.cell.fault.Name, r.cell.phase, r.landed,
			strings.ReplaceAll(held, "|", "/"), r.phase, r.reason, r.recovery)
	}
	return b.String()
}
