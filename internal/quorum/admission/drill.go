package admission

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// checkDrill refuses a drill schedule that does not parse, and a drill
// target that is not a cluster of the group's zone or is the cluster the
// group runs on: the drill controller would only skip such drills, each time.
// A zone that cannot be read yet is a warning, not a refusal.
func checkDrill(ctx context.Context, c client.Reader, g *srv1alpha1.ProtectionGroup) (admission.Warnings, error) {
	d := g.Spec.Drill
	if d == nil {
		return nil, nil
	}
	if _, err := srv1alpha1.ParseDrillSchedule(d.Schedule); err != nil {
		return nil, fmt.Errorf("spec.drill.schedule of ProtectionGroup %s: %w; write minute hour day-of-month month day-of-week, in UTC (for example \"0 3 * * 0\", Sundays at 03:00)", g.Name, err)
	}
	target := d.Template.TargetCluster
	if target == g.Spec.ActiveCluster {
		return nil, fmt.Errorf("spec.drill.template.targetCluster of ProtectionGroup %s is %s, the cluster the group runs on; a drill boots the DR copies, so name a DR cluster", g.Name, target)
	}
	if g.Spec.ZoneRef == nil {
		return admission.Warnings{fmt.Sprintf("spec.drill.template.targetCluster %s was not checked: the group has no zoneRef yet", target)}, nil
	}
	z := &srv1alpha1.ProtectionZone{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: g.Namespace, Name: g.Spec.ZoneRef.Name}, z); err != nil {
		if apierrors.IsNotFound(err) {
			return admission.Warnings{fmt.Sprintf("spec.drill.template.targetCluster %s was not checked: ProtectionZone %s does not exist yet", target, g.Spec.ZoneRef.Name)}, nil
		}
		return nil, err
	}
	if !contains(clustersOf(z), target) {
		return nil, fmt.Errorf("spec.drill.template.targetCluster of ProtectionGroup %s is %q, which is not a cluster of zone %s; name one of: %s", g.Name, target, z.Name, strings.Join(targetsOf(z, g.Spec.ActiveCluster), ", "))
	}
	return nil, nil
}
