package admission

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// protectionGroups validates a quorum ProtectionGroup's boot plan against the
// group's VMs (srv1alpha1.CheckBootPlan). The chart calls it only when the
// plan is written or changed (a match condition), so the controllers' writes
// of spec.virtualMachines never wait on it: a VM leaving the group does not
// block on a plan that names it, and `kubectl siterecovery validate` reports
// the plan then.
type protectionGroups struct {
	client client.Reader
	remote remote.ClusterCache
}

var _ admission.Validator[*srv1alpha1.ProtectionGroup] = &protectionGroups{}

// labelsTimeout bounds reading the VMs' labels from the active cluster, well
// inside the webhook's own timeout.
const labelsTimeout = 5 * time.Second

// ValidateCreate refuses a new group's boot plan that names VMs wrongly or
// has an invalid selector or step.
// It also refuses a group whose VMs use a network that a cluster the group
// may move to lacks and that no network mapping maps (v.networks).
// And it refuses a drill whose schedule or target is wrong (checkDrill), and
// application consistency the zone's backend cannot give (checkConsistency).
func (v *protectionGroups) ValidateCreate(ctx context.Context, g *srv1alpha1.ProtectionGroup) (admission.Warnings, error) {
	warnings, err := checkDrill(ctx, v.client, g)
	if err != nil {
		return warnings, err
	}
	consistencyWarnings, err := checkConsistency(ctx, v.client, g)
	warnings = append(warnings, consistencyWarnings...)
	if err != nil {
		return warnings, err
	}
	planWarnings, err := v.check(ctx, g)
	warnings = append(warnings, planWarnings...)
	if err != nil {
		return warnings, err
	}
	return v.checkNetworks(ctx, g, warnings)
}

// ValidateUpdate checks the plan only when it changed, the networks only
// when the group's network mappings changed, the drill and the consistency
// only when they changed.
func (v *protectionGroups) ValidateUpdate(ctx context.Context, old, g *srv1alpha1.ProtectionGroup) (admission.Warnings, error) {
	var warnings admission.Warnings
	if !equality.Semantic.DeepEqual(old.Spec.Drill, g.Spec.Drill) {
		var err error
		if warnings, err = checkDrill(ctx, v.client, g); err != nil {
			return warnings, err
		}
	}
	if !equality.Semantic.DeepEqual(old.Spec.Consistency, g.Spec.Consistency) {
		consistencyWarnings, err := checkConsistency(ctx, v.client, g)
		warnings = append(warnings, consistencyWarnings...)
		if err != nil {
			return warnings, err
		}
	}
	if !equality.Semantic.DeepEqual(old.Spec.Boot, g.Spec.Boot) {
		var err error
		planWarnings, err := v.check(ctx, g)
		warnings = append(warnings, planWarnings...)
		if err != nil {
			return warnings, err
		}
	}
	if equality.Semantic.DeepEqual(old.Spec.NetworkMappings, g.Spec.NetworkMappings) {
		return warnings, nil
	}
	return v.checkNetworks(ctx, g, warnings)
}

func (v *protectionGroups) checkNetworks(ctx context.Context, g *srv1alpha1.ProtectionGroup, warnings admission.Warnings) (admission.Warnings, error) {
	problems, netWarnings := v.networks(ctx, g)
	warnings = append(warnings, netWarnings...)
	if len(problems) > 0 {
		return warnings, fmt.Errorf("ProtectionGroup %s: %s; map them in the zone's or the group's spec.networkMappings, or create them on the target", g.Name, strings.Join(problems, "; "))
	}
	return warnings, nil
}

// ValidateDelete accepts every deletion.
func (v *protectionGroups) ValidateDelete(context.Context, *srv1alpha1.ProtectionGroup) (admission.Warnings, error) {
	return nil, nil
}

func (v *protectionGroups) check(ctx context.Context, g *srv1alpha1.ProtectionGroup) (admission.Warnings, error) {
	if g.Spec.Boot == nil || len(g.Spec.Boot.Stages) == 0 {
		return nil, nil
	}
	var warnings admission.Warnings
	var vmLabels map[string]map[string]string
	if slices.ContainsFunc(g.Spec.Boot.Stages, func(s srv1alpha1.BootStage) bool { return s.Selector != nil }) {
		var err error
		if vmLabels, err = v.labels(ctx, g); err != nil {
			// Not a refusal: the selectors are only matched for a warning.
			warnings = append(warnings, fmt.Sprintf("the stages' selectors were not matched against the group's VMs: %v; kubectl siterecovery validate group %s matches them later", err, g.Name))
		}
	}
	problems, planWarnings := srv1alpha1.CheckBootPlan(g.Spec.Boot, g.Spec.VirtualMachines, vmLabels)
	if len(problems) > 0 {
		return nil, fmt.Errorf("spec.boot of ProtectionGroup %s: %s", g.Name, strings.Join(problems, "; "))
	}
	return append(warnings, planWarnings...), nil
}

// labels reads the labels of the group's VMs on its active cluster, where
// they run and where pg-sync copies them from.
func (v *protectionGroups) labels(ctx context.Context, g *srv1alpha1.ProtectionGroup) (map[string]map[string]string, error) {
	if g.Spec.ZoneRef == nil || g.Spec.ActiveCluster == "" {
		return nil, fmt.Errorf("the group has no zoneRef and activeCluster yet")
	}
	rc, err := v.remote.Get(remote.Key{Namespace: g.Namespace, Zone: g.Spec.ZoneRef.Name, Cluster: g.Spec.ActiveCluster})
	if err != nil {
		return nil, fmt.Errorf("active cluster %s cannot be reached now (%w)", g.Spec.ActiveCluster, err)
	}
	ctx, cancel := context.WithTimeout(ctx, labelsTimeout)
	defer cancel()
	out := map[string]map[string]string{}
	for _, ns := range g.VMNamespaces() {
		list := &kubevirtv1.VirtualMachineList{}
		if err := rc.Direct.List(ctx, list, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("listing VirtualMachines in %s on %s failed: %w", ns, g.Spec.ActiveCluster, err)
		}
		for i := range list.Items {
			out[ns+"/"+list.Items[i].Name] = list.Items[i].Labels
		}
	}
	return out, nil
}
