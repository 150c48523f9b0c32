package failover

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// ReasonRestoredFromImage is the DataLossPossible reason of an unplanned
// failover through a DRPC once the target runs: its message names the time of
// the image the target was restored from.
const ReasonRestoredFromImage = "RestoredFromImage"

// recordRestoredImage names, on DataLossPossible, the image an unplanned
// failover through a DRPC restored on the target: the group's last complete
// sync as the DRPC recorded it. Writes after that time are lost, so the time
// is the data-loss window a user must reconcile. The DRPC keeps that time
// until the new primary completes its own first sync, which starts only after
// the failover, so the request reads it when it sees the DRPC settle.
func recordRestoredImage(s *scope, d *drv1alpha1.DRPlacementControl) {
	if !s.unplanned() {
		return
	}
	msg := restoredImage(s.zone, s.group.Name, d, s.now)
	s.trail.Condition(srv1alpha1.ConditionDataLossRisk, metav1.ConditionTrue, ReasonRestoredFromImage, msg)
}

// restoredImage says what the target of an unplanned failover holds.
func restoredImage(z *srv1alpha1.ProtectionZone, group string, d *drv1alpha1.DRPlacementControl, now time.Time) string {
	t := d.Status.LastGroupSyncTime
	if t == nil || t.IsZero() {
		return fmt.Sprintf("unplanned failover with the %s backend: DRPlacementControl %s recorded no complete sync of group %s, so the target holds whatever it last received; writes not replicated before the failover are lost",
			z.Spec.StorageBackend, d.Name, group)
	}
	at := t.UTC().Format(time.RFC3339)
	return fmt.Sprintf("unplanned failover with the %s backend: group %s was restored from its last complete sync at %s (%s before the failover completed); writes after %s are lost",
		z.Spec.StorageBackend, group, at, now.Sub(t.Time).Round(time.Second), at)
}
