package protection_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/protection"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/faultmatrix"
	"github.com/siterecovery/siterecovery/test/sim/guest"
)

// dataCell is one cell of the data fault matrix: a fault landing the moment a
// planned failover enters a phase.
type dataCell struct {
	fault *faultmatrix.Fault
	phase srv1alpha1.FailoverPhase
}

func (c dataCell) String() string { return c.fault.Name + " @ " + string(c.phase) }

// dataCells is how many cells a run covers; the rotation picks them.
const dataCells = 3

// dataFaultHold is how long a fault lasts before it is healed.
const dataFaultHold = time.Second

// TestDataFaultMatrix moves the db VM back and forth with planned failovers
// while its guest writes between moves, each move with one fault (a process
// killed, an API server stopped) landing the moment the request enters one
// phase, held, then healed. The safety recorder's data invariant reads the
// guest's data back at every start of the VM; after each move every write
// acknowledged anywhere reads back, none corrupt, on the cluster it runs on;
// and the VM never ran on two clusters at once.
func TestDataFaultMatrix(t *testing.T) {
	var all []dataCell
	for _, f := range []*faultmatrix.Fault{
		faultmatrix.QuorumKilled(),
		faultmatrix.PGKilled(faultmatrix.Source), faultmatrix.PGKilled(faultmatrix.Target),
		faultmatrix.AgentKilled(faultmatrix.Source), faultmatrix.AgentKilled(faultmatrix.Target),
		faultmatrix.APIStopped(faultmatrix.Target),
	} {
		for _, p := range []srv1alpha1.FailoverPhase{srv1alpha1.FailoverStoppingOnSource, srv1alpha1.FailoverWaitingForDRBD, srv1alpha1.FailoverStartingOnTarget} {
			all = append(all, dataCell{f, p})
		}
	}
	cells, seed := faultmatrix.Pick(all, nil, dataCells)
	faultmatrix.Announce(t, cells, seed)

	z := newZone(t)
	ctx, q := t.Context(), z.Client(env.Quorum)
	vm, guests, onPrimary, onDR := runDB(t, z)
	require.NoError(t, q.Create(ctx, newRequest("protect-db", "db")))
	env.Eventually(t, wait, "protect-db Protected", phaseIs(ctx, q, "protect-db", srv1alpha1.ProtectionProtected, protection.ReasonProtected))
	require.NoError(t, z.fabric.SetDrainRate(64<<10)) // protocol A's window reaches the peer as a link carries it
	on := map[string]*guest.Cluster{env.Primary: onPrimary, env.DR: onDR}
	vmis := faultmatrix.RecordVMIs(t, ctx, scheme.New(), env.AppNS, map[string]*rest.Config{
		env.Primary: z.Clusters[env.Primary].Config, env.DR: z.Clusters[env.DR].Config})
	data := faultmatrix.CheckData(ctx, vmis, guests, on, vm)

	at, other := env.Primary, env.DR
	for i, c := range cells {
		_, err := guests.Write(ctx, on[at], vm, 32)
		require.NoError(t, err, "the guest writes on %s before move %d", at, i)
		name := fmt.Sprintf("move-%d", i)
		require.NoError(t, q.Create(ctx, newFailover(name, other, srv1alpha1.FailoverPlanned)))
		landed := waitEntered(t, z, name, c.phase)
		cluster := c.fault.Cluster(at, other)
		c.fault.Inject(t, z.Env, z.procs, cluster)
		time.Sleep(dataFaultHold) // the fault lasts: that is the scenario, not a wait for an event
		c.fault.Heal(t, z.Env, z.procs, cluster)
		waitCompleted(t, z, name)
		res := verify(t, guests, on[other], vm)
		t.Logf("cell %q: the fault landed in %s; then %s on %s", c, landed, res, other)
		at, other = other, at
	}
	checks := data.Checks()
	t.Logf("data invariant, at each start of the VM: %v", checks)
	require.Empty(t, data.Losses(), "no acknowledged write lost or corrupt where the VM started")
	require.GreaterOrEqual(t, len(checks), len(cells), "the VM started at least once a move")
	require.Empty(t, vmis.Overlaps(), "the VM ran on one cluster at a time")
}

// waitEntered polls FailoverRequest name until it is in phase or past it,
// and returns the phase it found: a fault lands there.
func waitEntered(t *testing.T, z *zone, name string, phase srv1alpha1.FailoverPhase) srv1alpha1.FailoverPhase {
	t.Helper()
	order := map[srv1alpha1.FailoverPhase]int{
		srv1alpha1.FailoverPending: 1, srv1alpha1.FailoverStoppingOnSource: 2, srv1alpha1.FailoverWaitingForDRBD: 3,
		srv1alpha1.FailoverStartingOnTarget: 4, srv1alpha1.FailoverCompleted: 5, srv1alpha1.FailoverFailed: 5,
	}
	fr := &srv1alpha1.FailoverRequest{}
	env.Eventually(t, wait, name+" in "+string(phase), func() error {
		if err := z.Client(env.Quorum).Get(t.Context(), client.ObjectKey{Namespace: env.Namespace, Name: name}, fr); err != nil {
			return err
		}
		if order[fr.Status.Phase] < order[phase] {
			return fmt.Errorf("phase %q: %s", fr.Status.Phase, fr.Status.Message)
		}
		return nil
	})
	return fr.Status.Phase
}
