package protection_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/protection"
	"github.com/siterecovery/siterecovery/test/env"
)

// TestPartitionedSiteRejoinsWithoutTouchingTheActiveData: the primary site is
// cut off (its API server and its DRBD links) while its VM keeps writing, and
// the group fails over unplanned to the DR cluster, where the guest writes on.
// When the site returns, its writes made while cut off are discarded and it
// resyncs from the DR cluster: every write acknowledged on the DR cluster (and
// before the cut) reads back there, the returned site's disks equal the DR
// cluster's byte for byte, and the VM runs on one cluster only.
func TestPartitionedSiteRejoinsWithoutTouchingTheActiveData(t *testing.T) {
	z := newZoneWith(t, env.Options{Latency: true}, quorumOptions)
	ctx := t.Context()
	q, p, d := z.Client(env.Quorum), z.Client(env.Primary), z.Client(env.DR)
	vm, guests, onPrimary, onDR := runDB(t, z)
	require.NoError(t, q.Create(ctx, newRequest("protect-db", "db")))
	env.Eventually(t, wait, "protect-db Protected", phaseIs(ctx, q, "protect-db", srv1alpha1.ProtectionProtected, protection.ReasonProtected))
	_, err := guests.Write(ctx, onPrimary, vm, 64)
	require.NoError(t, err)
	require.NoError(t, z.fabric.Drain(srv1alpha1.DRBDResourceName("db")), "nothing in flight at the cut")
	res := &srv1alpha1.DRBDResource{}
	require.NoError(t, p.Get(ctx, client.ObjectKey{Namespace: env.AppNS, Name: srv1alpha1.DRBDResourceName("db")}, res))

	// The partition: the site runs on, cut off.
	require.NoError(t, z.fabric.CutLinks())
	z.Partition(t, env.Primary, true)
	unplanned(t, z, "disaster")
	verify(t, guests, onDR, vm)
	_, err = guests.Write(ctx, onDR, vm, 32)
	require.NoError(t, err, "the VM writes on the DR cluster")
	// The cut-off primary's VM runs on and writes, through its DRBD devices.
	require.NoError(t, p.Get(ctx, vm, &kubevirtv1.VirtualMachineInstance{}), "the VM still runs on the cut-off primary")
	node := env.Nodes[env.Primary].Name
	for _, v := range res.Spec.Volumes {
		for off := int64(0); off < 64<<20; off += 4 << 20 {
			require.NoError(t, z.fabric.WriteDevice(node, int(v.Minor), off, bytes.Repeat([]byte{0xd1}, 4096)), "the cut-off primary still writes")
		}
	}

	require.NoError(t, z.fabric.RestoreLinks())
	z.Partition(t, env.Primary, false)
	var report string
	env.Eventually(t, 2*wait, "the primary rejoined: Diverged=False/"+srv1alpha1.ReasonDivergedDiscarded, func() error {
		pg := &srv1alpha1.ProtectionGroup{}
		if err := q.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "prod-pg"}, pg); err != nil {
			return err
		}
		c := meta.FindStatusCondition(pg.Status.Conditions, srv1alpha1.ConditionDiverged)
		if c == nil || c.Reason != srv1alpha1.ReasonDivergedDiscarded {
			return fmt.Errorf("Diverged is %v", c)
		}
		report = c.Message
		return nil
	})
	t.Logf("divergence: %s", report)
	assert.Contains(t, report, "128Ki out of sync (apps/db 128Ki)", "the report names the VM and how much it wrote while cut off")

	// One site runs the VM: the DR cluster, on its data.
	err = p.Get(ctx, vm, &kubevirtv1.VirtualMachineInstance{})
	require.True(t, apierrors.IsNotFound(err), "the VM was stopped on the returned primary: %v", err)
	res2 := verify(t, guests, onDR, vm)
	assert.Equal(t, 64+32, res2.Acknowledged)
	require.NoError(t, z.fabric.Drain(srv1alpha1.DRBDResourceName("db")))
	for _, claim := range []string{"db-root", "db-data"} {
		env.Eventually(t, wait, "the primary's copy of "+claim+" resynced", func() error {
			if contents(t, p, z.devices, claim) != contents(t, d, z.devices, claim) {
				return fmt.Errorf("the primary's %s differs from the DR cluster's", claim)
			}
			return nil
		})
	}
}
