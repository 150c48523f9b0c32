package drpc_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	replicationv1alpha1 "github.com/csi-addons/kubernetes-csi-addons/api/replication.storage/v1alpha1"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
	"github.com/siterecovery/siterecovery/internal/workload/vrg"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/faultmatrix"
	"github.com/siterecovery/siterecovery/test/sim/storagearray"
)

const (
	// faultHold is how long a fault lasts: long enough for quorum-manager to
	// find a cluster unreachable (three failed probes a second apart).
	faultHold = 5 * time.Second
	// matrixRecovery bounds how long a DRPC may take to settle once its fault
	// is healed.
	matrixRecovery = 2 * time.Minute
	// matrixDelay keeps every step under way long enough for a fault to land
	// in it: a VM start or stop, and an array's change of role.
	matrixDelay = 1500 * time.Millisecond
	matrixApp   = "app-1"
	// matrixNaming bounds how much longer than faultHold a fault may last
	// while the DRPC has yet to name the cluster it cannot reach.
	matrixNaming = 30 * time.Second
)

// TestDRPCFaultMatrix runs the cells of the DRPC fault matrix
// (matrix_cells_test.go) that this run covers, on one Offloaded zone with one
// application, which each cell moves to the other cluster with its action. A
// cell injects its fault the moment the DRPC is seen at its progression step,
// holds it, heals it and checks what a user relies on: while the fault lasts
// the DRPC is settled or says why it waits (its Available condition); after
// the heal it settles on the target (Relocated or FailedOver, Completed), the
// application running there and stopped on the source, the target's VGR
// Primary and the source's Secondary. In a Relocate, the two clusters' VGRs
// are never Primary at once; over the whole run the application never ran on
// both clusters and the safety recorder saw no secondary storage under a
// running VM.
func TestDRPCFaultMatrix(t *testing.T) {
	cells, seed := faultmatrix.Pick(allCells(), validated, ciCells)
	faultmatrix.Announce(t, cells, seed)
	if len(cells) == 0 {
		t.Skip("no cell in make test's slice (ciCells); make drpc-fault-matrix runs them all")
	}
	// What the faults need: a latency proxy in front of each API server, and
	// quorum-manager on a clock a fault jumps.
	z := newZoneOn(t, env.Options{Latency: true}, env.OffloadedZone{Policy: policyName, ArrayDelay: matrixDelay,
		VMStartDelay: matrixDelay, VMStopDelay: matrixDelay, Clock: &env.SteppedClock{}})
	vmis := faultmatrix.RecordVMIs(t, t.Context(), z.Scheme, env.AppNS, z.workloadConfigs())
	z.addApp(matrixApp, env.Primary)
	z.requireDeployed(matrixApp, env.Primary, env.DR)
	var rows []faultmatrix.Row
	for i, c := range cells {
		t.Run(fmt.Sprintf("%02d %s", i, c), func(t *testing.T) {
			row := z.runCell(t, c)
			t.Logf("cell %s: %s → %s, %s after the heal", c, row.Held, row.Outcome, row.Recovery.Round(100*time.Millisecond))
			rows = append(rows, row)
		})
	}
	t.Log("\n" + faultmatrix.Table(rows))
	require.Empty(t, vmis.Overlaps(), "the application ran on two clusters at once")
	require.Positive(t, vmis.Events(), "the VM recorder saw the run")
	require.Empty(t, z.safety.Violations(), "storage turned secondary under a running VM, or a VM booted on secondary storage")
}

func (z *zone) workloadConfigs() map[string]*rest.Config {
	return map[string]*rest.Config{env.Primary: z.Clusters[env.Primary].Config, env.DR: z.Clusters[env.DR].Config}
}

// vgrPrimary is a VolumeGroupReplication asked to be, or reporting, Primary.
var vgrPrimary = faultmatrix.Kind{
	List: func() client.ObjectList { return &replicationv1alpha1.VolumeGroupReplicationList{} },
	Live: func(o client.Object) bool {
		v := o.(*replicationv1alpha1.VolumeGroupReplication)
		return v.Spec.ReplicationState == replicationv1alpha1.Primary || v.Status.State == storagearray.StateFor(replicationv1alpha1.Primary)
	},
}

func (z *zone) runCell(t *testing.T, c cell) faultmatrix.Row {
	top := z.t
	z.t = t
	defer func() { z.t = top }()
	from := z.drpc(matrixApp).Status.PreferredDecision.ClusterName
	to := z.other(from)
	row := faultmatrix.Row{Flow: "DRPC " + string(c.action), Fault: c.fault.Name, Step: string(c.step)}
	var vgrs *faultmatrix.Presence
	if c.action == drv1alpha1.ActionRelocate {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		vgrs = faultmatrix.RecordPresence(t, ctx, z.Scheme, vgrPrimary, vrg.DefaultOperatorNamespace, z.workloadConfigs())
	}
	t.Logf("%s from %s to %s", c, from, to)
	z.updateDRPC(matrixApp, func(d *drv1alpha1.DRPlacementControl) {
		d.Spec.Action = c.action
		if c.action == drv1alpha1.ActionRelocate {
			d.Spec.PreferredCluster = to
		} else {
			d.Spec.FailoverCluster = to
		}
	})
	env.Eventually(t, matrixRecovery, matrixApp+" at "+string(c.step), func() error {
		d := z.drpc(matrixApp)
		if !c.reached(d, to) {
			return fmt.Errorf("phase %s progression %s", d.Status.Phase, d.Status.Progression)
		}
		row.Landed = fmt.Sprintf("%s/%s", d.Status.Phase, d.Status.Progression)
		return nil
	})
	cluster := c.fault.Cluster(from, to)
	c.fault.Inject(t, z.Env, z.procs, cluster)
	healed := false
	defer func() {
		if !healed { // the cell failed: the next one needs a whole zone
			c.fault.Heal(top, z.Env, z.procs, cluster)
		}
	}()
	row.Held = z.holdWatching(t, c, cluster)
	c.fault.Heal(top, z.Env, z.procs, cluster)
	healed = true
	healedAt := time.Now()

	phase := drv1alpha1.DRStateRelocated
	if c.action == drv1alpha1.ActionFailover {
		phase = drv1alpha1.DRStateFailedOver
	}
	env.Eventually(t, matrixRecovery, matrixApp+" settled on "+to, func() error {
		return z.drpcAt(matrixApp, phase, drv1alpha1.ProgressionCompleted, to)
	})
	row.Recovery = time.Since(healedAt)
	row.Outcome = fmt.Sprintf("%s/%s on %s", phase, drv1alpha1.ProgressionCompleted, to)
	z.requireRunsOn(matrixApp, to, from)
	requireVRGs(z, matrixApp, to, from)
	requireVGR(z, to, replicationv1alpha1.Primary)
	requireVGR(z, from, replicationv1alpha1.Secondary)
	if vgrs != nil {
		require.Empty(t, vgrs.Overlaps(), "cell %s: both clusters' VGRs were Primary at once in a Relocate", c)
		require.Positive(t, vgrs.Events(), "the VGR recorder saw the cell")
	}
	return row
}

// holdWatching lets the fault last faultHold while reading the DRPC as a user
// would: until it settles, its Available condition says what it waits for. It
// returns the last thing it said. A stopped quorum API server shows nothing to
// anyone, so there is nothing to read then.
//
// While a workload cluster's API server is stopped, Available names that
// cluster, settled or not. That takes the prober's failure threshold and a
// reconcile, which on a loaded machine can take longer than faultHold: that
// fault lasts until Available has named the cluster, or matrixNaming longer
// at most.
func (z *zone) holdWatching(t *testing.T, c cell, cluster string) string {
	held := ""
	mustName := c.fault.Name == faultmatrix.APIStopped(faultmatrix.Source).Name || c.fault.Name == faultmatrix.APIStopped(faultmatrix.Target).Name
	named := false
	end, deadline := time.Now().Add(faultHold), time.Now().Add(faultHold+matrixNaming)
	for ; time.Now().Before(end) || (mustName && !named && time.Now().Before(deadline)); time.Sleep(200 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		d := &drv1alpha1.DRPlacementControl{}
		err := z.Client(env.Quorum).Get(ctx, keyOf(matrixApp), d)
		cancel()
		if err != nil {
			continue
		}
		a := condition(d, drv1alpha1.ConditionAvailable)
		require.NotEmpty(t, a.Reason, "cell %s: the DRPC has no Available reason in %s/%s", c, d.Status.Phase, d.Status.Progression)
		require.NotEmpty(t, a.Message, "cell %s: the DRPC waits in %s/%s without saying why", c, d.Status.Phase, d.Status.Progression)
		held = fmt.Sprintf("%s/%s: %s: %s", d.Status.Phase, d.Status.Progression, a.Reason, a.Message)
		named = named || strings.Contains(a.Message, remote.ErrUnreachable.Error()+": "+cluster)
	}
	if mustName {
		require.True(t, named, "cell %s: while %s's API server is down the DRPC's Available names it; last said: %s", c, cluster, held)
	}
	if held == "" {
		return "(unreadable)"
	}
	return held
}
