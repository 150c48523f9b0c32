package admission_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/env"
)

// drills checks spec.drill at admission (a subtest of TestQuorumWebhooks): a
// schedule without five fields is refused by the schema, one that does not
// parse, a target that is no cluster of the zone or the active cluster by
// the webhook, saying what to write instead.
func drills(t *testing.T, _ *env.Env, admin user) {
	ctx := context.Background()
	group := func(schedule, target string) *srv1alpha1.ProtectionGroup {
		return &srv1alpha1.ProtectionGroup{
			ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "drilled"},
			Spec: srv1alpha1.ProtectionGroupSpec{
				VirtualMachines: []srv1alpha1.VirtualMachineReference{{Namespace: env.AppNS, Name: "db"}},
				ActiveCluster:   env.Primary, ZoneRef: &srv1alpha1.LocalObjectReference{Name: env.ZoneName},
				Drill: &srv1alpha1.DrillSchedule{Schedule: schedule, Template: srv1alpha1.DrillTemplate{TargetCluster: target}},
			},
		}
	}
	dry := client.DryRunAll
	require.NoError(t, admin.Create(ctx, group("0 3 * * 0", env.DR), dry))

	err := admin.Create(ctx, group("0 3 * * * *", env.DR), dry)
	require.ErrorContains(t, err, "spec.drill.schedule", "six fields: refused by the schema")
	require.NotContains(t, err.Error(), "denied the request")

	denied(t, admin.Create(ctx, group("0 25 * * *", env.DR), dry),
		`spec.drill.schedule of ProtectionGroup drilled: drill schedule "0 25 * * *" is not a five-field cron expression (minute hour day-of-month month day-of-week): `)
	denied(t, admin.Create(ctx, group("TZ=UTC 0 3 * *", env.DR), dry), "a time zone prefix is not allowed, the schedule is in UTC")
	denied(t, admin.Create(ctx, group("0 3 * * 0", "elsewhere"), dry),
		`spec.drill.template.targetCluster of ProtectionGroup drilled is "elsewhere", which is not a cluster of zone production; name one of: `+env.DR)
	denied(t, admin.Create(ctx, group("0 3 * * 0", env.Primary), dry),
		"spec.drill.template.targetCluster of ProtectionGroup drilled is "+env.Primary+", the cluster the group runs on; a drill boots the DR copies, so name a DR cluster")

	// A change of the drill alone is checked too.
	g := group("0 3 * * 0", env.DR)
	require.NoError(t, admin.Create(ctx, g))
	g.Spec.Drill.Schedule = "0 3 31 2 *"
	denied(t, admin.Update(ctx, g, dry), `drill schedule "0 3 31 2 *" is never due`)
	require.NoError(t, admin.Delete(ctx, g))
}
