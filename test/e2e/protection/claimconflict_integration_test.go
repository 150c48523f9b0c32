package protection_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/protection"
	"github.com/siterecovery/siterecovery/test/env"
)

// A Protected request's claim is removed from the DR cluster's allocation and
// another request takes its port meanwhile. The request shows the conflict as
// a condition naming the other request, and warns once: not at each of the
// re-checks that follow, nor after quorum-manager restarts. When the other
// claim goes, the claim is written back and the condition cleared.
func TestClaimConflictIsShownOnce(t *testing.T) {
	z := newZone(t)
	ctx := t.Context()
	q, p, d := z.Client(env.Quorum), z.Client(env.Primary), z.Client(env.DR)
	req := protectVM(t, q, p, "vm1")

	other := srv1alpha1.DRBDClaim{RequestUID: "other-uid", DRNamespace: "dr-staging", Request: "protect-other",
		Port: req.Status.Port, Minors: []int32{1900}, ClaimedAt: metav1.Now()}
	a := allocationOf(t, d)
	a.Spec.Claims = []srv1alpha1.DRBDClaim{other}
	require.NoError(t, d.Update(ctx, a))
	env.Eventually(t, wait, "ClaimConflict shown", func() error {
		c := meta.FindStatusCondition(getRequest(t, q, "protect-vm1").Status.Conditions, protection.ConditionClaimConflict)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != protection.ReasonClaimTaken {
			return fmt.Errorf("ClaimConflict %+v", c)
		}
		if !strings.Contains(c.Message, "dr-staging/protect-other") || !strings.Contains(c.Message, "Unprotect and re-protect") {
			return fmt.Errorf("message %q names neither the other request nor the way out", c.Message)
		}
		return nil
	})

	// Each removal of the claim from the primary's allocation is written back
	// by the next re-check, which also finds the DR conflict again: three
	// re-checks, one of them after a restart, while the conflict lasts.
	for i := range 3 {
		if i == 1 {
			z.quorum.Stop(t)
			z.quorum = z.StartQuorum(t, quorumOptions)
		}
		a := allocationOf(t, p)
		a.Spec.Claims = slices.DeleteFunc(a.Spec.Claims, func(c srv1alpha1.DRBDClaim) bool { return c.RequestUID == string(req.UID) })
		require.NoError(t, p.Update(ctx, a))
		env.Eventually(t, wait, fmt.Sprintf("claim restored on the primary (%d)", i), func() error {
			for _, c := range allocationOf(t, p).Spec.Claims {
				if c.RequestUID == string(req.UID) {
					return nil
				}
			}
			return fmt.Errorf("no claim of protect-vm1 on the primary")
		})
	}

	// The other request lets go: the claim is back and the condition gone.
	a = allocationOf(t, d)
	a.Spec.Claims = nil
	require.NoError(t, d.Update(ctx, a))
	env.Eventually(t, wait, "conflict resolved", eventSeen(q, "protect-vm1", corev1.EventTypeNormal, protection.EventClaimConflictResolved))
	assert.Nil(t, meta.FindStatusCondition(getRequest(t, q, "protect-vm1").Status.Conditions, protection.ConditionClaimConflict))
	require.NoError(t, claimsExact(ctx, d, map[string]*srv1alpha1.ProtectionRequest{env.Namespace + "/protect-vm1": req}))

	list := &corev1.EventList{}
	require.NoError(t, q.List(ctx, list, client.InNamespace(env.Namespace)))
	var taken int32
	for _, ev := range list.Items {
		if ev.InvolvedObject.Name == "protect-vm1" && ev.Reason == protection.EventClaimTaken {
			taken += max(ev.Count, 1)
		}
	}
	assert.Equal(t, int32(1), taken, "ClaimTaken is warned once per conflict")
}
