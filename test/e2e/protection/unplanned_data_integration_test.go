package protection_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/drbd"
	"github.com/siterecovery/siterecovery/internal/quorum/protection"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/sim/guest"
)

// TestUnplannedFailoverUnderProtocolCLosesNothing: the primary site crashes
// (its API server and DRBD links gone) with the link up until the crash.
// Under protocol C every write the guest saw acknowledged was on the DR
// replica first, so the unplanned failover boots the VM there with all of
// them: lost 0, corrupt 0.
func TestUnplannedFailoverUnderProtocolCLosesNothing(t *testing.T) {
	z, vm, guests, onDR := protectedDB(t, srv1alpha1.ProtocolC)
	acked := crash(t, z, guests, vm)
	fr := unplanned(t, z, "crash-c")
	res := verify(t, guests, onDR, vm)
	assert.Equal(t, acked, res.Acknowledged)
	risk := meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionDataLossRisk)
	require.NotNil(t, risk)
	assert.Equal(t, srv1alpha1.ReasonLossLastReported, risk.Reason, "the crashed source could not be asked: %s", risk.Message)
}

// TestUnplannedFailoverUnderProtocolALosesAtMostTheSendBuffer: under
// protocol A a write completes once it is in DRBD's send buffer, and the
// link carries the buffer slowly: at the crash, acknowledged writes are
// still in it. The DR replica lacks them, and no more than the request's
// DataLossPossible says: the send buffer's bound. Nothing reads back
// corrupt, and every write the DR replica has reads back whole.
func TestUnplannedFailoverUnderProtocolALosesAtMostTheSendBuffer(t *testing.T) {
	z, vm, guests, onDR := protectedDB(t, srv1alpha1.ProtocolA)
	onPrimary := guest.NewCluster(env.Primary, z.Client(env.Primary), z.fabric, z.devices)
	_, err := guests.Write(t.Context(), onPrimary, vm, 32)
	require.NoError(t, err)
	require.NoError(t, z.fabric.Drain(srv1alpha1.DRBDResourceName("db")), "these reached the DR cluster")
	require.NoError(t, z.fabric.SetDrainRate(16)) // KiB/s: 4 blocks a second reach the DR cluster
	acked := crash(t, z, guests, vm)
	fr := unplanned(t, z, "crash-a")
	risk := meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionDataLossRisk)
	require.NotNil(t, risk)
	bound := fmt.Sprintf("at most %dMi per replica", drbd.ProtocolALossBound>>20)
	require.Contains(t, risk.Message, bound, "the request reports the window")

	var res guest.Result
	env.Eventually(t, wait, "the guest's data reads on the DR cluster", func() (err error) {
		res, err = guests.Verify(t.Context(), onDR, vm)
		return err
	})
	t.Logf("protocol A, crash with the link slow: %s (%s)", res, bound)
	assert.Equal(t, acked, res.Acknowledged)
	assert.Zero(t, res.Corrupt)
	assert.Positive(t, res.Lost, "writes in the send buffer at the crash are lost: the link was slower than the guest")
	assert.GreaterOrEqual(t, res.Intact, 32, "the writes the link carried before the crash are there")
	assert.LessOrEqual(t, int64(res.Lost)*4096, int64(drbd.ProtocolALossBound), "no more is lost than the request reported")
	assert.Equal(t, res.Acknowledged, res.Intact+res.Lost)
}

// protectedDB protects the db VM with protocol and returns the zone, the VM,
// its guest and the guest's view of the DR cluster.
func protectedDB(t *testing.T, protocol srv1alpha1.ReplicationProtocol) (*zone, client.ObjectKey, *guest.Guests, *guest.Cluster) {
	t.Helper()
	z := newZone(t)
	ctx, q := t.Context(), z.Client(env.Quorum)
	vm, guests, _, onDR := runDB(t, z)
	req := newRequest("protect-db", "db")
	req.Spec.Protocol = protocol
	require.NoError(t, q.Create(ctx, req))
	env.Eventually(t, wait, "protect-db Protected", phaseIs(ctx, q, "protect-db", srv1alpha1.ProtectionProtected, protection.ReasonProtected))
	require.NoError(t, z.fabric.Drain(srv1alpha1.DRBDResourceName("db")))
	return z, vm, guests, onDR
}

// crash has the guest write 64 blocks on the primary, then the primary site
// fails at once: its DRBD links and its API server go. It returns the
// writes acknowledged in all.
func crash(t *testing.T, z *zone, guests *guest.Guests, vm client.ObjectKey) int {
	t.Helper()
	onPrimary := guest.NewCluster(env.Primary, z.Client(env.Primary), z.fabric, z.devices)
	ack, err := guests.Write(t.Context(), onPrimary, vm, 64)
	require.NoError(t, err)
	require.NoError(t, z.fabric.CutLinks())
	require.NoError(t, z.Clusters[env.Primary].StopAPIServer())
	return int(ack.LastSeq)
}

// unplanned fails the group over to the DR cluster with an unplanned
// FailoverRequest, created with annotations, and returns it once Completed.
func unplanned(t *testing.T, z *zone, name string, annotations ...map[string]string) *srv1alpha1.FailoverRequest {
	t.Helper()
	fr := newFailover(name, env.DR, srv1alpha1.FailoverUnplanned)
	if len(annotations) > 0 {
		fr.Annotations = annotations[0]
	}
	require.NoError(t, z.Client(env.Quorum).Create(t.Context(), fr))
	return waitCompleted(t, z, name)
}

// newFailover is a FailoverRequest of the db VM's group.
func newFailover(name, target string, typ srv1alpha1.FailoverType) *srv1alpha1.FailoverRequest {
	return &srv1alpha1.FailoverRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name},
		Spec: srv1alpha1.FailoverRequestSpec{
			ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: "prod-pg", Namespace: env.Namespace},
			TargetCluster:      target, FailoverType: typ, DrainTimeoutSeconds: 60, BatchBootTimeoutSeconds: 120,
		},
	}
}

// waitCompleted waits until FailoverRequest name is Completed and returns it.
func waitCompleted(t *testing.T, z *zone, name string) *srv1alpha1.FailoverRequest {
	t.Helper()
	fr := &srv1alpha1.FailoverRequest{}
	env.Eventually(t, 2*wait, name+" Completed", func() error {
		if err := z.Client(env.Quorum).Get(t.Context(), client.ObjectKey{Namespace: env.Namespace, Name: name}, fr); err != nil {
			return err
		}
		if fr.Status.Phase != srv1alpha1.FailoverCompleted {
			return fmt.Errorf("phase %q: %s", fr.Status.Phase, fr.Status.Message)
		}
		return nil
	})
	return fr
}

// TestFencedFailoverAndRejoinKeepEveryWrite: the primary's API server goes
// while its DRBD stays Primary and connected; the operator fences it and
// confirms, and the unplanned failover disconnects the DR replica from it and
// promotes there. The guest writes on the DR cluster. When the primary
// answers again, a planned failback discards the writes it might have made
// while fenced, resyncs it from the DR cluster and moves the VM back: every
// write acknowledged on either cluster reads back on the primary, none
// corrupt.
func TestFencedFailoverAndRejoinKeepEveryWrite(t *testing.T) {
	z, vm, guests, onDR := protectedDB(t, srv1alpha1.ProtocolC)
	ctx := t.Context()
	onPrimary := guest.NewCluster(env.Primary, z.Client(env.Primary), z.fabric, z.devices)
	_, err := guests.Write(ctx, onPrimary, vm, 48)
	require.NoError(t, err)
	require.NoError(t, z.Clusters[env.Primary].StopAPIServer())
	// The operator powered the site's nodes off (its VM writes no more) and
	// confirms it on the request.
	fenced := unplanned(t, z, "fenced", map[string]string{srv1alpha1.SourceFencedAnnotation: "prod-pg"})
	c := meta.FindStatusCondition(fenced.Status.Conditions, srv1alpha1.ConditionFencingRequired)
	require.NotNil(t, c)
	require.Equal(t, srv1alpha1.ReasonSourceFenced, c.Reason, c.Message)
	verify(t, guests, onDR, vm)
	_, err = guests.Write(ctx, onDR, vm, 48)
	require.NoError(t, err, "the VM writes on the DR cluster")

	require.NoError(t, z.Clusters[env.Primary].StartAPIServer())
	back := newFailover("back", env.Primary, srv1alpha1.FailoverPlanned)
	back.Annotations = map[string]string{srv1alpha1.DiscardDivergedAnnotation: "prod-pg"}
	require.NoError(t, z.Client(env.Quorum).Create(ctx, back))
	waitCompleted(t, z, "back")
	res := verify(t, guests, onPrimary, vm)
	assert.Equal(t, 96, res.Acknowledged)
}
