package protectiongroup

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// WantedSpec decides force per replica, only while the intent allows it, and
// never takes back a force already asked with Primary.
func TestWantedSpec(t *testing.T) {
	pri, sec := srv1alpha1.RolePrimary, srv1alpha1.RoleSecondary
	primaryQ, secondaryQ := srv1alpha1.QuorumForRole(pri), srv1alpha1.QuorumForRole(sec)
	replica := func(spec srv1alpha1.DRBDRole, force bool, status string, promotable bool) *srv1alpha1.DRBDResource {
		return &srv1alpha1.DRBDResource{
			Spec:   srv1alpha1.DRBDResourceSpec{Role: spec, ForcePromotion: force, Quorum: secondaryQ},
			Status: srv1alpha1.DRBDResourceStatus{Role: status, Promotable: promotable},
		}
	}
	refused := replica(sec, false, "Secondary", true)
	refused.Status.Conditions = []metav1.Condition{{Type: srv1alpha1.ConditionRoleApplied, Status: metav1.ConditionFalse,
		Reason: srv1alpha1.ReasonPromotionRefused, Message: "peer is primary"}}
	fenced := replica(sec, false, "Secondary", true)
	fenced.Spec.FencedPeers = []string{"node-a"}
	for _, c := range []struct {
		name      string
		in        srv1alpha1.GroupDRBDIntent
		res       *srv1alpha1.DRBDResource
		wantForce bool
		wantQ     srv1alpha1.QuorumSettings
	}{
		{"planned promotion never forces", srv1alpha1.GroupDRBDIntent{Role: pri, Quorum: &primaryQ}, replica(sec, false, "Secondary", false), false, primaryQ},
		{"unplanned: a promotable replica is not forced", srv1alpha1.GroupDRBDIntent{Role: pri, Force: true}, replica(sec, false, "Secondary", true), false, secondaryQ},
		{"unplanned: one that is not promotable is", srv1alpha1.GroupDRBDIntent{Role: pri, Force: true}, replica(sec, false, "Secondary", false), true, secondaryQ},
		{"unplanned: one whose promotion was refused is", srv1alpha1.GroupDRBDIntent{Role: pri, Force: true}, refused, true, secondaryQ},
		{"unplanned: one cut off a fenced peer is", srv1alpha1.GroupDRBDIntent{Role: pri, Force: true}, fenced, true, secondaryQ},
		{"a forced primary stays forced when the quorum drops", srv1alpha1.GroupDRBDIntent{Role: pri, Quorum: &primaryQ}, replica(pri, true, "Primary", false), true, primaryQ},
		{"the protection flow's initial forced promotion is kept", srv1alpha1.GroupDRBDIntent{Role: pri, Quorum: &primaryQ}, replica(pri, true, "Secondary", false), true, primaryQ},
		{"a demotion clears force", srv1alpha1.GroupDRBDIntent{Role: sec, Quorum: &secondaryQ}, replica(pri, true, "Primary", false), false, secondaryQ},
	} {
		t.Run(c.name, func(t *testing.T) {
			role, force, q := WantedSpec(&c.in, c.res)
			require.Equal(t, c.in.Role, role)
			require.Equal(t, c.wantForce, force)
			require.Equal(t, c.wantQ, q)
		})
	}
}
