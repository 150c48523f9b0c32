package testfailover

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// diskUpToDate is the only local disk state whose bytes a test boots.
const diskUpToDate = "UpToDate"

// replicasUpToDate refuses to snapshot a DRBD disk whose DR replica is not
// UpToDate. An Inconsistent replica (an initial sync or a resync under way,
// SyncTarget) holds a mix of old and new blocks that no guest ever wrote as
// one image: booted, it passes or fails for reasons that say nothing about a
// failover. Outdated and Consistent replicas are whole images but older than
// production, and DRBD itself refuses to promote them without --force, so a
// planned failover would not boot them either. Only disks whose source is a
// DRBD backing PVC are checked; another backend replicates the PVC itself.
//
// The test fails at once (a Stalled error: Verified=False, then the cleanup)
// rather than waiting for the sync: the TestFailover API has no field asking
// to wait for replication, and its one bound, spec.timeoutSeconds, covers the
// whole test (snapshots, boot and checks) while a sync of a large disk can take
// longer than that on its own; waiting inside it would end most such tests in a
// Timeout that says less than this message. Every problem of the request or of
// the group that retrying in the phase cannot fix is handled the same way here
// (invalid).
//
// The state is read before each disk's snapshot is requested, not again while
// the snapshot becomes ready: once requested from an UpToDate replica the copy
// stands, whatever DRBD does next (a cut link, then a resync, leaves the
// snapshot as it was cut). The state is the one the DR agent last reported, at
// most its status interval old.
func (r *Reconciler) replicasUpToDate(ctx context.Context, s *scope, rc *remote.Remote, disks []disk) error {
	cluster := s.tf.Spec.TargetCluster
	replicas := map[string]*srv1alpha1.DRBDResource{}
	var refused []string
	for _, d := range disks {
		if d.source.Labels[srv1alpha1.ObjectRoleLabel] != backingRoleValue {
			continue
		}
		name := srv1alpha1.DRBDResourceName(d.vm)
		key := d.namespace + "/" + name
		res, ok := replicas[key]
		if !ok {
			res = &srv1alpha1.DRBDResource{}
			if err := rc.Direct.Get(ctx, client.ObjectKey{Namespace: d.namespace, Name: name}, res); err != nil {
				if !apierrors.IsNotFound(err) {
					return remoteErr(cluster, "reading DRBDResource "+key, err)
				}
				res = nil
			}
			replicas[key] = res
		}
		if res == nil {
			refused = append(refused, fmt.Sprintf("VM %s/%s: its DR replica (DRBDResource %s) is not on %s, so the state of PVC %s is unknown",
				d.namespace, d.vm, key, cluster, d.source.Name))
			continue
		}
		if why := notUpToDate(res, d.source.Name, d.volume); why != "" {
			refused = append(refused, fmt.Sprintf("VM %s/%s: DR replica %s %s", d.namespace, d.vm, name, why))
		}
	}
	if len(refused) == 0 {
		return nil
	}
	return invalid(ReasonReplicaNotUpToDate, "%s; a test failover boots only UpToDate replicas: wait until the DR replica is UpToDate (its sync finished) and start the test again",
		strings.Join(refused, "; "))
}

// notUpToDate says why the volume of DRBD replica d that stores backing PVC
// claim may not be snapshotted, or "" when it is UpToDate. The volume is the
// one whose spec names claim as its backingPVC, else the one replicating VM
// volume vmVolume (spec disk); a replica that names neither (its volumes set
// by devicePath) must be UpToDate on every volume. It reads the replica's
// status only: the local disk state and, to say how far a sync is, the
// replication state towards each peer.
func notUpToDate(d *srv1alpha1.DRBDResource, claim, vmVolume string) string {
	var numbers []int32
	for _, v := range d.Spec.Volumes {
		if v.BackingPVC != nil && v.BackingPVC.Name == claim {
			numbers = []int32{v.Number}
			break
		}
		if v.Disk != "" && v.Disk == vmVolume && numbers == nil {
			numbers = []int32{v.Number}
		}
	}
	if numbers == nil {
		for _, v := range d.Spec.Volumes {
			numbers = append(numbers, v.Number)
		}
	}
	if len(numbers) == 0 {
		return "has no volumes"
	}
	var why []string
	for _, number := range numbers {
		state := ""
		for _, v := range d.Status.Volumes {
			if v.Number == number {
				state = v.DiskState
			}
		}
		switch state {
		case diskUpToDate:
		case "":
			why = append(why, fmt.Sprintf("volume %d (PVC %s) has no disk state reported yet (is the drbd-node-agent of node %s running?)", number, claim, d.Spec.NodeName))
		default:
			why = append(why, fmt.Sprintf("volume %d (PVC %s) is %s%s", number, claim, state, syncDetail(d, number)))
		}
	}
	return strings.Join(why, ", ")
}

// syncDetail is how the volume replicates from its peers, in parentheses:
// "(SyncTarget from node-a, 42.00% in sync)", or the connection state of a
// peer it is not connected to.
func syncDetail(d *srv1alpha1.DRBDResource, number int32) string {
	var parts []string
	for _, p := range d.Status.Peers {
		if p.ConnectionState != "" && p.ConnectionState != "Connected" {
			parts = append(parts, fmt.Sprintf("%s to %s", p.ConnectionState, p.NodeName))
			continue
		}
		for _, v := range p.Volumes {
			if v.Number != number || v.ReplicationState == "" || v.ReplicationState == "Established" {
				continue
			}
			s := fmt.Sprintf("%s from %s", v.ReplicationState, p.NodeName)
			if v.PercentInSync != "" {
				s += ", " + v.PercentInSync + "% in sync"
			}
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}
