package testfailover_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/setup"
	"github.com/siterecovery/siterecovery/internal/quorum/testfailover"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/faultmatrix"
)

const (
	// faultHold is how long a fault lasts: long enough for the test to notice
	// it (a cluster is unreachable to quorum-manager after three failed probes
	// a second apart) and short against its timeouts.
	faultHold = 5 * time.Second
	// matrixRecovery bounds how long a test may take to end once its fault is
	// healed.
	matrixRecovery = 2 * time.Minute
	// matrixVMDelay keeps each VM start and stop under way long enough for a
	// fault to land while the test's copies boot.
	matrixVMDelay = 1500 * time.Millisecond
)

// TestTestFailoverFaultMatrix runs the cells of the test failover fault
// matrix (matrix_cells_test.go) that this run covers, on one zone, each with a
// TestFailover of its own. A cell injects its fault the moment the test is
// seen entering its phase, holds it, heals it, and checks what a user relies
// on: while the fault lasts the test ends or says why it waits (a Ready reason
// and message); after the heal it succeeds, and nothing of it is left on the
// DR cluster while production is untouched. Over the whole run, each
// production VM ran on the primary without a stop, never on the DR cluster,
// and no test copy ever ran on the primary: the copies, in the test's
// isolated namespace on the DR cluster, are the only VMs of the group there.
func TestTestFailoverFaultMatrix(t *testing.T) {
	// Every cell has been seen to pass: a nil filter draws from the whole
	// matrix. A new fault gets a filter until its cells have.
	cells, seed := faultmatrix.Pick(allCells(), nil, ciCells)
	faultmatrix.Announce(t, cells, seed)
	// What the faults need: a latency proxy in front of each API server, and
	// quorum-manager on a clock a fault jumps.
	z := newZoneWith(t, 2, zoneOptions{workload: env.WorkloadOptions{VMStartDelay: matrixVMDelay, VMStopDelay: matrixVMDelay},
		env: env.Options{Latency: true}, quorum: setup.QuorumOptions{Clock: &env.SteppedClock{}}})
	workload := map[string]*rest.Config{env.Primary: z.Clusters[env.Primary].Config, env.DR: z.Clusters[env.DR].Config}
	production := faultmatrix.RecordVMIs(t, t.Context(), z.Scheme, env.AppNS, workload)
	copies := faultmatrix.RecordPresence(t, t.Context(), z.Scheme, faultmatrix.Kind{
		List: func() client.ObjectList { return &kubevirtv1.VirtualMachineInstanceList{} },
		Live: func(o client.Object) bool { return o.GetLabels()[testfailover.LabelUID] != "" },
	}, "", map[string]*rest.Config{env.Primary: z.Clusters[env.Primary].Config})
	for _, vm := range z.vms {
		env.Eventually(t, timeout, vm+" running on the primary", func() error {
			if !production.SawOn(env.Primary, vm) {
				return fmt.Errorf("no instance of %s seen on %s", vm, env.Primary)
			}
			return nil
		})
	}
	prod := z.production()
	var rows []faultmatrix.Row
	for i, c := range cells {
		t.Run(fmt.Sprintf("%02d %s", i, c), func(t *testing.T) {
			row := z.runCell(t, c, fmt.Sprintf("cell-%02d", i), prod)
			t.Logf("cell %s: %s → %s, %s after the heal", c, row.Held, row.Outcome, row.Recovery.Round(100*time.Millisecond))
			rows = append(rows, row)
		})
	}
	t.Log("\n" + faultmatrix.Table(rows))
	require.Empty(t, production.Overlaps(), "a production VM ran on two clusters at once")
	for _, vm := range z.vms {
		require.False(t, production.Ended(env.Primary, vm), "production VM %s stopped on the primary during a test failover", vm)
		require.False(t, production.SawOn(env.DR, vm), "production VM %s ran on the DR cluster", vm)
		require.False(t, copies.SawOn(env.Primary, vm), "a test copy of %s ran on the primary", vm)
	}
	require.Positive(t, production.Events(), "the VM recorder saw the run")
}

// runCell runs one cell with a TestFailover named name.
func (z *zone) runCell(t *testing.T, c cell, name string, prod prodState) faultmatrix.Row {
	z.t = t
	row := faultmatrix.Row{Flow: "test failover", Fault: c.fault.Name, Step: string(c.phase)}
	z.testFailover(name, env.DR, nil)
	env.Eventually(t, matrixRecovery, name+" entering "+string(c.phase), func() error {
		tf := z.request(name)
		if phaseIndex(tf.Status.Phase) < phaseIndex(c.phase) {
			return fmt.Errorf("phase %q", tf.Status.Phase)
		}
		row.Landed = string(tf.Status.Phase)
		return nil
	})
	cluster := c.fault.Cluster(env.Primary, env.DR)
	c.fault.Inject(t, z.Env, z.procs, cluster)
	healed := false
	defer func() {
		if !healed { // the cell failed: the next one needs a whole zone
			c.fault.Heal(z.root, z.Env, z.procs, cluster)
		}
	}()
	row.Held = z.holdWatching(t, c, name)
	c.fault.Heal(z.root, z.Env, z.procs, cluster)
	healed = true
	healedAt := time.Now()

	var tf *srv1alpha1.TestFailover
	env.Eventually(t, matrixRecovery, name+" ending after the heal", func() error {
		tf = z.request(name)
		if !terminalPhase(tf.Status.Phase) {
			return fmt.Errorf("phase %s: %+v", tf.Status.Phase, meta.FindStatusCondition(tf.Status.Conditions, srv1alpha1.ConditionReady))
		}
		return nil
	})
	row.Recovery = time.Since(healedAt)
	row.Outcome = fmt.Sprintf("%s (%s)", tf.Status.Phase, readyReason(tf))
	require.Equal(t, srv1alpha1.TestFailoverSucceeded, tf.Status.Phase, "cell %s: %+v", c, tf.Status.Conditions)
	require.True(t, meta.IsStatusConditionTrue(tf.Status.Conditions, testfailover.ConditionCleanedUp), "cell %s: CleanedUp", c)
	for _, r := range tf.Status.Results {
		require.True(t, r.Passed, "cell %s: %s/%s: %s", c, r.VM, r.Check, r.Message)
	}
	z.assertLeavesNothing(tf)
	z.assertProductionUntouched(prod)
	return row
}

func terminalPhase(p srv1alpha1.TestFailoverPhase) bool {
	return p == srv1alpha1.TestFailoverSucceeded || p == srv1alpha1.TestFailoverFailed
}

// holdWatching lets the fault last faultHold while reading the test as a user
// would: while it is not finished it says why it waits (a Ready reason and a
// message), and once the target's API server has been down for a while, the
// message names it. It returns the last message seen, or how the test ended.
// A stopped quorum API server shows nothing to anyone, so there is nothing to
// read then.
func (z *zone) holdWatching(t *testing.T, c cell, name string) string {
	held := ""
	namedTarget := false
	for end := time.Now().Add(faultHold); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		tf := &srv1alpha1.TestFailover{}
		err := z.Client(env.Quorum).Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: name}, tf)
		cancel()
		if err != nil {
			continue
		}
		if terminalPhase(tf.Status.Phase) {
			return held + fmt.Sprintf(" → %s while the fault lasted", tf.Status.Phase)
		}
		ready := meta.FindStatusCondition(tf.Status.Conditions, srv1alpha1.ConditionReady)
		require.NotNil(t, ready, "cell %s: %s has no Ready condition in %s", c, name, tf.Status.Phase)
		require.NotEmpty(t, ready.Reason, "cell %s: %s", c, name)
		require.NotEmpty(t, ready.Message, "cell %s: %s waits in %s without saying why", c, name, tf.Status.Phase)
		held = fmt.Sprintf("%s: %s: %s", tf.Status.Phase, ready.Reason, ready.Message)
		namedTarget = namedTarget || strings.Contains(ready.Message, env.DR)
	}
	if c.fault.Name == faultmatrix.APIStopped(faultmatrix.Target).Name && c.phase != srv1alpha1.TestFailoverCleaningUp && held != "" {
		require.True(t, namedTarget, "cell %s: while the DR cluster's API server is down the test says it cannot reach it; last said: %s", c, held)
	}
	if held == "" {
		return "(unreadable)"
	}
	return held
}
