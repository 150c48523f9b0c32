package volsync

import (
	"fmt"
	"hash/crc32"
	"time"

	"github.com/robfig/cron/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
)

const (
	// RGSLabel marks the VolumeGroupSnapshots, restored PVCs and
	// ReplicationSources a ReplicationGroupSource created; its value is the
	// source's name.
	RGSLabel = "dr.siterecovery.trilio.io/replication-group-source"
	// RGDLabel marks the ReplicationDestinations and PVCs a
	// ReplicationGroupDestination created; its value is the destination's name.
	RGDLabel = "dr.siterecovery.trilio.io/replication-group-destination"
	// ManualTriggerAnnotation on a VolumeGroupSnapshot is the trigger.manual
	// value that started its cycle, reported as lastManualSync once it syncs.
	ManualTriggerAnnotation = "dr.siterecovery.trilio.io/manual-trigger"
	// VRGLabel marks the ReplicationGroupSources and ReplicationGroupDestinations
	// a VolumeReplicationGroup created; its value is the VRG's name.
	VRGLabel = "dr.siterecovery.trilio.io/volumereplicationgroup"
)

// serviceNameMax is the longest Service name: a DNS label.
const serviceNameMax = 63

// ServiceName is the Service VolSync's rsync-tls mover creates for a
// ReplicationDestination: volsync-rsync-tls-dst-<rd>, with the name replaced by
// its CRC-32 (8 hex digits) when the whole would not fit in a DNS label.
func ServiceName(rd string) string {
	const prefix = "volsync-rsync-tls-dst-"
	if len(prefix)+len(rd) <= serviceNameMax {
		return prefix + rd
	}
	return fmt.Sprintf("%s%08x", prefix, crc32.ChecksumIEEE([]byte(rd)))
}

// ClusterSetAddress is the name under which the clusters of a clusterset
// reach a ReplicationDestination's Service once a ServiceExport of the same
// name exports it (Multi-Cluster Services API).
func ClusterSetAddress(namespace, rd string) string {
	return ServiceName(rd) + "." + namespace + ".svc.clusterset.local"
}

// PSKSecretName is the Secret holding the TLS pre-shared key of a group's
// movers; both halves of a group name the same Secret.
func PSKSecretName(group string) string { return group + "-vs-secret" }

// KeySecretName is the pre-shared-key Secret a group's movers use: the VRG's,
// which the quorum tier copies to both clusters, when a VRG owns the group;
// the group's own otherwise.
func KeySecretName(group metav1.Object) string {
	if v := group.GetLabels()[VRGLabel]; v != "" {
		return drv1alpha1.VolSyncPSKSecretName(v)
	}
	return PSKSecretName(group.GetName())
}

// RestoredPVCName is the read-only PVC a cycle restores from a PVC's member
// snapshot and syncs from.
func RestoredPVCName(pvc string) string { return "cg-" + pvc }

// Schedule turns a schedulingInterval (<number><m|h|d>) into the cron
// expression of the group's cycles, which repeats exactly every interval;
// an interval cron cannot honour is refused (drv1alpha1.VolSyncSchedule).
func Schedule(interval string) (string, error) {
	return drv1alpha1.VolSyncSchedule(interval)
}

// ParseInterval parses <number><m|h|d>.
func ParseInterval(interval string) (time.Duration, error) {
	return drv1alpha1.ParseSchedulingInterval(interval)
}

// NextRun is when a cron schedule next fires after from.
func NextRun(schedule string, from time.Time) (time.Time, error) {
	s, err := cron.ParseStandard(schedule)
	if err != nil {
		return time.Time{}, fmt.Errorf("schedule %q: %w", schedule, err)
	}
	return s.Next(from), nil
}
