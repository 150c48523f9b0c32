package testfailover

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/freeze"
	"github.com/siterecovery/siterecovery/internal/freeze/drain"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// pointSource names test failover's points in ConsistencyPoint.source.
const pointSource = "TestFailover"

// cutPollInterval is how often a frozen cut reads its snapshots.
const cutPollInterval = 100 * time.Millisecond

// cut requests the snapshots of disks and records the consistency they
// reach. A group that asks for Application consistency has them cut while its
// running guests are frozen on the source cluster (the group's active one),
// when its DR copies are DRBD replicas (unfreezable), which hold every write
// the source completed: at once under protocol C, once drained under protocol
// A (the cut waits for that within the freeze bound; past it the point is
// Crash, naming the replica). A snapshot cut during the freeze then holds no
// half-written file system state.
// The freeze lasts until each snapshot is cut (status.creationTime), not
// until it is ready. A group that does not ask, or whose source cannot be
// reached, gets crash-consistent snapshots, recorded as such.
func (r *Reconciler) cut(ctx context.Context, s *scope, rc *remote.Remote, disks []disk, classes map[string]*string) error {
	var replicas []drain.Replica
	var src *remote.Remote
	take := func(ctx context.Context) error {
		if len(replicas) > 0 {
			if lacking := drain.Wait(ctx, src.Direct, replicas); lacking != "" {
				return fmt.Errorf("the DR replicas did not drain within the freeze bound: %s", lacking)
			}
		}
		return r.requestAndCut(ctx, s, rc, disks, classes)
	}
	crash := func(why string) error {
		if err := r.requestAll(ctx, s, rc, disks, classes); err != nil {
			return err
		}
		p := freeze.CrashPoint(pointSource, r.Clock.Now(), why)
		return r.recordPoint(ctx, s, &p)
	}
	spec := s.group.Spec.Consistency
	if spec == nil || spec.Mode != srv1alpha1.ConsistencyApplication {
		return crash("")
	}
	why, replicas := r.unfreezable(ctx, s, rc, disks)
	if why != "" {
		return crash(why)
	}
	vms, fc, src, why := r.sourceGuests(ctx, s)
	if fc == nil {
		return crash(why)
	}
	bound := time.Duration(spec.FreezeTimeoutSeconds) * time.Second
	p, err := freeze.Point(ctx, fc, vms, freeze.Options{Bound: bound, Source: pointSource, Now: r.Clock.Now}, take)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		// The guests are thawed; the snapshots requested so far are cut
		// whenever the storage gets to them, and the test goes on with them
		// rather than freezing again: crash-consistent, and said why.
		return crash(fmt.Sprintf("the guests were frozen for at most %s (freezeTimeoutSeconds) and thawed before the snapshots were cut: %v", bound, err))
	}
	return r.recordPoint(ctx, s, &p)
}

// sourceGuests are the group's VMs that run on its active cluster, with the
// freeze client of that cluster; without one, why.
func (r *Reconciler) sourceGuests(ctx context.Context, s *scope) ([]types.NamespacedName, freeze.Client, *remote.Remote, string) {
	source := s.group.Spec.ActiveCluster
	src, err := r.Remote.Get(remote.Key{Namespace: s.tf.Namespace, Zone: s.zone, Cluster: source})
	if err != nil {
		return nil, nil, nil, fmt.Sprintf("the source cluster %s cannot be reached to freeze the guests: %v", source, err)
	}
	if src.Config == nil {
		return nil, nil, nil, fmt.Sprintf("no API connection to the source cluster %s to freeze the guests", source)
	}
	fc, err := r.newFreezer(src)
	if err != nil {
		return nil, nil, nil, fmt.Sprintf("source cluster %s: %v", source, err)
	}
	var vms []types.NamespacedName
	for _, ref := range s.group.Spec.VirtualMachines {
		key := types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}
		vmi := &kubevirtv1.VirtualMachineInstance{}
		err := src.Direct.Get(ctx, key, vmi)
		switch {
		case apierrors.IsNotFound(err):
			// A stopped VM writes nothing: its disks are consistent as they are.
		case err != nil:
			return nil, nil, nil, fmt.Sprintf("reading VirtualMachineInstance %s on %s: %v", key, source, err)
		case vmi.Status.Phase == kubevirtv1.Running:
			vms = append(vms, key)
		}
	}
	return vms, fc, src, ""
}

func (r *Reconciler) newFreezer(src *remote.Remote) (freeze.Client, error) {
	return freeze.NewRESTClient(src.Config)
}

// requestAndCut creates the snapshots of disks and waits, within ctx, until
// each one is cut.
func (r *Reconciler) requestAndCut(ctx context.Context, s *scope, rc *remote.Remote, disks []disk, classes map[string]*string) error {
	if err := r.requestAll(ctx, s, rc, disks, classes); err != nil {
		return err
	}
	var uncut []string
	err := wait.PollUntilContextCancel(ctx, cutPollInterval, true, func(ctx context.Context) (bool, error) {
		uncut = uncut[:0]
		for _, d := range disks {
			vs := &snapshotv1.VolumeSnapshot{}
			if err := rc.Direct.Get(ctx, client.ObjectKey{Namespace: d.namespace, Name: snapshotName(s.tf, d.vm, d.volume)}, vs); err != nil {
				return false, remoteErr(s.tf.Spec.TargetCluster, "reading VolumeSnapshot of "+d.String(), err)
			}
			if err := snapshotError(vs); err != nil {
				return false, err
			}
			if vs.Status == nil || vs.Status.CreationTime == nil {
				uncut = append(uncut, d.String())
			}
		}
		return len(uncut) == 0, nil
	})
	if err != nil && len(uncut) > 0 {
		return fmt.Errorf("snapshots not cut within the freeze bound: %s: %w", strings.Join(uncut, ", "), err)
	}
	return err
}

// requestAll creates the snapshots of disks.
func (r *Reconciler) requestAll(ctx context.Context, s *scope, rc *remote.Remote, disks []disk, classes map[string]*string) error {
	for _, d := range disks {
		if _, err := r.requestSnapshot(ctx, s, rc, d, nil, classes[d.namespace+"/"+snapshotName(s.tf, d.vm, d.volume)]); err != nil {
			return err
		}
	}
	return nil
}

// recordPoint records p in the test's status and, when the group reads it,
// as the group's last point: a group that asks for Application consistency,
// or one whose recorded point p changes (its consistency, source, crash VMs
// or message; an Application point recorded before the group went back to
// Crash must not stay the newest). A crash-mode group is otherwise left
// alone: every one of its points is crash-consistent, and a status write per
// test would wake every watcher of the group for nothing. The group's status
// is patched on that one field, so it races with no other writer of it.
func (r *Reconciler) recordPoint(ctx context.Context, s *scope, p *srv1alpha1.ConsistencyPoint) error {
	s.tf.Status.Consistency = p
	if !groupRecords(s.group, p) {
		return nil
	}
	g, err := freeze.RecordLastPoint(ctx, r.Client, s.group, p)
	if err != nil {
		return err
	}
	s.group = g
	return nil
}

// groupRecords reports whether p goes into the group's status.consistency.
func groupRecords(g *srv1alpha1.ProtectionGroup, p *srv1alpha1.ConsistencyPoint) bool {
	if c := g.Spec.Consistency; c != nil && c.Mode == srv1alpha1.ConsistencyApplication {
		return true
	}
	if g.Status.Consistency == nil || g.Status.Consistency.LastPoint == nil {
		return false
	}
	last := g.Status.Consistency.LastPoint
	return last.Consistency != p.Consistency || last.Source != p.Source || last.Message != p.Message ||
		!slices.Equal(last.CrashConsistentVMs, p.CrashConsistentVMs)
}
