package testfailover_test

import (
	"fmt"
	"strings"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/testfailover"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/sim/guest"
)

// drainedBeforeTheCut runs a test failover while the protocol A replica of
// vmA holds writes in flight: the guests are frozen, the cut waits while the
// source's fresh readings (spec.statusRequest answered) show the writes in
// flight and no snapshot is requested; once the link delivers them the
// snapshots are cut, the point is Application and the guests are thawed.
// The DR replica stays UpToDate throughout (DRBD counts writes in flight on
// the connection, not as a disk state), so only the drain holds the cut.
func (z *zone) drainedBeforeTheCut(guests *guest.Guests, vmC, vmA types.NamespacedName) {
	t := z.t
	res := srv1alpha1.DRBDResourceName(vmA.Name)
	fabric := z.DRBD(t)
	require.NoError(t, fabric.Write(res, env.Nodes[env.Primary].Name, 64))

	name := z.testFailover("drained", env.DR, nil)
	source := client.ObjectKey{Namespace: vmA.Namespace, Name: res}
	env.Eventually(t, timeout, "a fresh reading of "+res+" shows writes in flight", func() error {
		r := &srv1alpha1.DRBDResource{}
		if err := z.Client(env.Primary).Get(z.ctx, source, r); err != nil {
			return err
		}
		if !strings.HasPrefix(r.Spec.StatusRequest, "drain-") || r.Status.StatusAnswered != r.Spec.StatusRequest {
			return fmt.Errorf("statusRequest %q answered %q", r.Spec.StatusRequest, r.Status.StatusAnswered)
		}
		if len(r.Status.Peers) != 1 || r.Status.Peers[0].APInFlightBytes == 0 {
			return fmt.Errorf("peers %+v", r.Status.Peers)
		}
		return nil
	})
	require.True(t, guests.Frozen(vmC), "%s is frozen while the cut waits", vmC)
	require.True(t, guests.Frozen(vmA), "%s is frozen while the cut waits", vmA)
	tf := z.request(name)
	snapshots := &snapshotv1.VolumeSnapshotList{}
	require.NoError(t, z.Client(env.DR).List(z.ctx, snapshots, client.InNamespace(env.AppNS),
		client.MatchingLabels{testfailover.LabelUID: string(tf.UID)}))
	require.Empty(t, snapshots.Items, "no snapshot is requested before the replicas drained")

	require.NoError(t, fabric.Drain(res))
	tf = z.waitPhase(name, srv1alpha1.TestFailoverSucceeded)
	p := tf.Status.Consistency
	require.NotNil(t, p)
	require.Equal(t, srv1alpha1.ConsistencyApplication, p.Consistency, p.Message)
	require.Equal(t, []string{vmC.String(), vmA.String()}, p.FrozenVMs)
	require.Positive(t, p.FrozenMilliseconds)
	require.Equal(t, p.Time, z.lastPoint().Time, "the group's last point is the test's")
	z.assertThawed(guests, vmC, vmA)
}
