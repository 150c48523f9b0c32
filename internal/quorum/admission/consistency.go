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
//     around;
//   - on a DRBD group of protocol A: test failover cuts its snapshots on the
//     DR replicas, which may lag the frozen source (protocol C replicas hold
//     every write the source completed).
//
// VolSync cycles are frozen around their own group snapshot. The freeze
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
	if z.Spec.StorageBackend == srv1alpha1.BackendDRBD && g.Spec.Replication.Protocol != srv1alpha1.ProtocolC {
		return nil, fmt.Errorf("spec.consistency.mode of ProtectionGroup %s is Application, but the group replicates with DRBD protocol %s in zone %s: "+
			"a test failover cuts its snapshots on the DR replicas while the source guests are frozen, and under protocol A the writes made "+
			"just before the freeze may still be on their way to the DR replica, so no point would be application-consistent; "+
			"write mode: Crash (or remove spec.consistency), or protect the group's VMs with spec.replication.protocol C",
			g.Name, protocolName(g.Spec.Replication.Protocol), z.Name)
	}
	return nil, nil
}

// protocolName is the protocol as the group's replicas get it: A when unset.
func protocolName(p srv1alpha1.ReplicationProtocol) srv1alpha1.ReplicationProtocol {
	if p == "" {
		return srv1alpha1.ProtocolA
	}
	return p
}
