package failover_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/env"
)

// waitReachable waits until the zone's status says quorum-manager reaches
// cluster.
func (z *zone) waitReachable(cluster string) {
	z.t.Helper()
	env.Eventually(z.t, timeout, "quorum-manager reaching "+cluster, func() error {
		pz := &srv1alpha1.ProtectionZone{}
		if err := z.Client(env.Quorum).Get(z.ctx, client.ObjectKey{Namespace: env.Namespace, Name: env.ZoneName}, pz); err != nil {
			return err
		}
		for _, st := range pz.Status.Clusters {
			if st.Name == cluster && meta.IsStatusConditionTrue(st.Conditions, srv1alpha1.ConditionReachable) {
				return nil
			}
		}
		return errPending
	})
}

// holdForFencing stops only the primary's API server, with its DRBD link up,
// starts an unplanned failover and waits until it holds with FencingRequired.
func holdForFencing(t *testing.T, z *zone, name string) *srv1alpha1.FailoverRequest {
	t.Helper()
	// quorum-manager must have reached the primary once, as in production,
	// where the zone was connected long before the site failed.
	z.waitReachable(env.Primary)
	require.NoError(t, z.Clusters[env.Primary].StopAPIServer())
	z.failover(name, env.DR, srv1alpha1.FailoverUnplanned)
	var fr *srv1alpha1.FailoverRequest
	env.Eventually(t, timeout, name+" held for fencing", func() error {
		fr = z.request(name)
		if c := meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionFencingRequired); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("phase %s: %s", fr.Status.Phase, fr.Status.Message)
		}
		return nil
	})
	require.Equal(t, srv1alpha1.FailoverWaitingForDRBD, fr.Status.Phase)
	require.Equal(t, srv1alpha1.ReasonSourcePrimaryConnected, readyReason(fr), "the wait names what it waits for")
	msg := meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionFencingRequired).Message
	for _, want := range []string{
		drbdName(z.vms[0]) + " (peer " + env.Nodes[env.Primary].Name + ")", "seen since", // what was seen, since when
		"may still be running",                          // what it means
		"restore " + env.Primary + "'s API server",      // way one
		srv1alpha1.SourceFencedAnnotation + "=" + group, // way two
	} {
		require.Contains(t, msg, want)
	}
	// Nothing was promoted: the target was not even asked to.
	for _, vm := range z.vms {
		r := z.drbd(env.DR, vm)
		require.Equal(t, srv1alpha1.RoleSecondary, r.Spec.Role)
		require.Equal(t, "Secondary", r.Status.Role)
		st, err := z.DRBD(t).Node(drbdName(vm), env.Nodes[env.Primary].Name)
		require.NoError(t, err)
		require.True(t, st.Connected, "the data path stays up")
		require.Equal(t, "Primary", st.Role)
	}
	return fr
}

// TestSourceControlPlaneDownFencedByOperator: the source's API server is gone
// but its DRBD is still Primary and connected. The request holds until the
// operator confirms the source fenced; the target then disconnects from it and
// promotes with force.
func TestSourceControlPlaneDownFencedByOperator(t *testing.T) {
	z := newZone(t, zoneOptions{vms: 1})
	vm := z.vms[0]
	// Protocol A lag the source has when its control plane goes: DRBD's
	// events do not report it, and nobody can ask.
	require.NoError(t, z.DRBD(t).Write(drbdName(vm), env.Nodes[env.Primary].Name, 64))
	fr := holdForFencing(t, z, "fence-me")
	risk := meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionDataLossRisk)
	require.Equal(t, srv1alpha1.ReasonLossLastReported, risk.Reason)
	for _, want := range []string{"the source " + env.Primary + " could not be asked for DRBD's current figures", "; it last answered at 20",
		" last reported ", "writes acknowledged on " + env.Primary + " since then are not counted"} {
		require.Contains(t, risk.Message, want, "DataLossPossible says plainly that the figure is old, and how old")
	}

	before := fr.DeepCopy()
	fr.Annotations = map[string]string{srv1alpha1.SourceFencedAnnotation: group}
	require.NoError(t, z.Client(env.Quorum).Patch(z.ctx, fr, client.MergeFrom(before), client.FieldOwner("kubectl-annotate")))

	fr = z.waitPhase("fence-me", srv1alpha1.FailoverCompleted)
	require.Equal(t, fullTrail, phases(fr))
	c := meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionFencingRequired)
	require.Equal(t, metav1.ConditionFalse, c.Status)
	require.Equal(t, srv1alpha1.ReasonSourceFenced, c.Reason)
	require.Contains(t, c.Message, `field manager "kubectl-annotate"`, "the condition records who confirmed")
	require.Contains(t, c.Message, " at 20", "and when")
	r := z.drbd(env.DR, vm)
	require.Equal(t, []string{env.Nodes[env.Primary].Name}, r.Spec.FencedPeers)
	require.True(t, r.Spec.ForcePromotion, "a promotion decided without the peer is forced")
	require.Equal(t, "Primary", r.Status.Role)
	st, err := z.DRBD(t).Node(drbdName(vm), env.Nodes[env.DR].Name)
	require.NoError(t, err)
	require.False(t, st.Connected, "two Primaries exist only while disconnected")
	z.assertActive(env.DR)
	z.assertLockReleased()
}

// TestSourceControlPlaneBackDemotesFirst: the source's API server returns
// while the request holds for fencing; the request stops and demotes the
// source, as a planned failover would, and promotes without force.
func TestSourceControlPlaneBackDemotesFirst(t *testing.T) {
	z := newZone(t, zoneOptions{vms: 1})
	holdForFencing(t, z, "wait-for-source")
	require.NoError(t, z.Clusters[env.Primary].StartAPIServer())

	fr := z.waitPhase("wait-for-source", srv1alpha1.FailoverCompleted)
	c := meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionFencingRequired)
	require.Equal(t, metav1.ConditionFalse, c.Status)
	require.Equal(t, srv1alpha1.ReasonSourceDemoted, c.Reason)
	require.True(t, meta.IsStatusConditionTrue(fr.Status.Conditions, srv1alpha1.ConditionSourceStopped), "the source stopped before the promotion")
	z.waitGroup(env.Primary, srv1alpha1.StateStopped)
	for _, vm := range z.vms {
		r := z.drbd(env.DR, vm)
		require.False(t, r.Spec.ForcePromotion, "a demoted source leaves nothing to force")
		require.Empty(t, r.Spec.FencedPeers)
		require.Equal(t, "Secondary", z.drbd(env.Primary, vm).Status.Role)
	}
	z.assertActive(env.DR)
	z.assertLockReleased()
}
