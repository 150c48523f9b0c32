package admission

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// checkConsistency refuses spec.consistency mode Application where no point
// could be application-consistent:
//   - in an Offloaded zone: the array replicates in cycles of its own and
//     neither the VolumeGroupReplication API nor the array lets the product
//     ask for a point at a chosen moment, so there is no instant to freeze
//     around.
//
// DRBD groups of either protocol are admitted: under protocol A a frozen
// cut waits until the DR replicas drained (internal/freeze/drain). VolSync
// cycles are frozen around their own group snapshot. The freeze
// bound itself (freezeTimeoutSeconds, 1 to 300) is the schema's. A zone that
// cannot be read yet is a warning, not a refusal.
func checkConsistency(ctx context.Context, c client.Reader, g *srv1alpha1.ProtectionGroup) (admission.Warnings, error) {
	if cs := g.Spec.Consistency; cs == nil || cs.Mode != srv1alpha1.ConsistencyApplication {
		return nil, nil
	}
	if g.Spec.ZoneRef == nil {
		return admission.Warnings{"spec.consistency mode Application was not checked against the zone's storageBackend: the group has no zoneRef yet"}, nil
	}
	z := &srv1alpha1.ProtectionZone{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: g.Namespace, Name: g.Spec.ZoneRef.Name}, z); err != nil {
		if apierrors.IsNotFound(err) {
			return admission.Warnings{fmt.Sprintf("spec.consistency mode Application was not checked: ProtectionZone %s does not exist yet", g.Spec.ZoneRef.Name)}, nil
		}
		return nil, err
	}
	if z.Spec.StorageBackend == srv1alpha1.BackendOffloaded {
		return nil, fmt.Errorf("spec.consistency.mode of ProtectionGroup %s is Application, but zone %s replicates with storageBackend Offloaded: the array cuts its points on its own schedule, with no moment to freeze the guests around, so each one is crash-consistent anyway; write mode: Crash (or remove spec.consistency), or protect the group in a DRBD or VolSync zone",
			g.Name, z.Name)
	}
	return nil, nil
}
