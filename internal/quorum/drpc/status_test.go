package drpc

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// While a cluster cannot be reached, the Available condition names it, in an
// action as once settled: that is the cluster a user has to look at.
func TestAvailableNamesUnreachableCluster(t *testing.T) {
	down := fmt.Errorf("%w: dr: its API server does not answer", remote.ErrUnreachable)
	for _, tc := range []struct {
		name        string
		phase       drv1alpha1.DRState
		progression drv1alpha1.ProgressionStatus
		unreachable map[string]error
		err         error
		want        string
	}{
		{name: "relocating", phase: drv1alpha1.DRStateRelocating, progression: drv1alpha1.ProgressionPreparingFinalSync,
			unreachable: map[string]error{"dr": down},
			err:         flow.Waiting(srv1alpha1.ReasonClusterUnreachable, unreachableRetry, "relocate needs both clusters: %v", down),
			want:        "Relocating: PreparingFinalSync; cluster unreachable: dr: its API server does not answer"},
		{name: "settled", phase: drv1alpha1.DRStateRelocated, progression: drv1alpha1.ProgressionCompleted,
			unreachable: map[string]error{"dr": down},
			want:        "application is placed on primary; cluster unreachable: dr: its API server does not answer"},
		{name: "cache not readable", phase: drv1alpha1.DRStateFailingOver, progression: drv1alpha1.ProgressionFailingOverToCluster,
			unreachable: map[string]error{"primary": errors.New("timed out waiting for cache")},
			want:        "FailingOver: FailingOverToCluster; cluster primary cannot be read: timed out waiting for cache"},
		{name: "all reachable", phase: drv1alpha1.DRStateRelocated, progression: drv1alpha1.ProgressionCompleted,
			want: "application is placed on primary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := drpc("app-1", drv1alpha1.ActionRelocate, "", "primary")
			d.Status.Phase, d.Status.Progression = tc.phase, tc.progression
			d.Status.PreferredDecision.ClusterName = "primary"
			s := &scope{drpc: &d, policy: &drv1alpha1.DRPolicy{}, group: &srv1alpha1.ProtectionGroup{},
				remotes: map[string]*remote.Remote{}, unreachable: tc.unreachable, clusters: []string{"primary", "dr"}}
			(&Reconciler{}).setConditions(s, tc.err)
			a := meta.FindStatusCondition(d.Status.Conditions, drv1alpha1.ConditionAvailable)
			require.NotNil(t, a)
			require.Equal(t, tc.want, a.Message)
		})
	}
}
