package env

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	replicationv1alpha1 "github.com/csi-addons/kubernetes-csi-addons/api/replication.storage/v1alpha1"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
)

// Safety records the VRGs, VGRs and VMIs of each workload cluster of an
// Offloaded zone from watches and replays them in resourceVersion order (one
// etcd per cluster orders every kind), to find the moments that the PVC-unused check before secondary and
// the DRPC's stop-before-secondary ordering exist to prevent. It knows an
// application's claim by AppPVCName of its VRG's pvcSelector app label.
type Safety struct {
	mu     sync.Mutex
	events map[string][]safetyEvent // by cluster
}

type safetyEvent struct {
	rv      uint64
	kind    string // "VRG", "VGR" or "VMI"
	key     string // namespace/name
	deleted bool
	// app and group (global-vgr label) of a VRG.
	app, group string
	// spec and status replication state of a VRG or VGR.
	spec, status string
	// claims ("namespace/claim") of a VMI that is not final.
	claims []string
	// listed: seen in a list after a gap in the watch, not as a watch event.
	listed bool
}

// WatchSafety starts recording on both workload clusters until the test ends.
// Start it before the applications exist.
func (e *Env) WatchSafety(t testing.TB) *Safety {
	t.Helper()
	s := &Safety{events: map[string][]safetyEvent{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for _, cluster := range []string{Primary, DR} {
		wc, err := client.NewWithWatch(e.Clusters[cluster].Config, client.Options{Scheme: e.Scheme})
		require.NoError(t, err)
		for _, list := range []client.ObjectList{&drv1alpha1.VolumeReplicationGroupList{},
			&replicationv1alpha1.VolumeGroupReplicationList{}, &kubevirtv1.VirtualMachineInstanceList{}} {
			require.NoError(t, wc.List(ctx, list))
			items, err := meta.ExtractList(list)
			require.NoError(t, err)
			for _, o := range items {
				s.record(cluster, o.(client.Object), false, true)
			}
			rv := list.(metav1.ListInterface).GetResourceVersion()
			go s.follow(ctx, wc, cluster, list, rv)
		}
	}
	return s
}

// follow watches one kind from rv, resuming where it left off when the watch
// ends or the API server is down, and listing again when a restarted API
// server no longer has that history.
func (s *Safety) follow(ctx context.Context, wc client.WithWatch, cluster string, list client.ObjectList, rv string) {
	for ctx.Err() == nil {
		w, err := wc.Watch(ctx, list.DeepCopyObject().(client.ObjectList),
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
		switch {
		case expired(err):
			rv = s.relist(ctx, wc, cluster, list, rv)
		case err != nil:
			pause(ctx) // the API server may be stopped on purpose
		default:
			rv = s.consume(ctx, wc, cluster, list, w, rv)
		}
	}
}

// consume records a watch's events until it ends and returns the
// resourceVersion to resume from, listing again when the history past the last
// event seen is gone (a restarted API server reports that in the stream).
func (s *Safety) consume(ctx context.Context, wc client.WithWatch, cluster string, list client.ObjectList, w watch.Interface, rv string) string {
	last, gone := s.drain(cluster, w, rv)
	if gone {
		// The gap starts after last: what the relist misses was seen alive
		// there, never before its own creation.
		return s.relist(ctx, wc, cluster, list, last)
	}
	return last
}

// drain records a watch's events and returns the last resourceVersion seen,
// and whether the history from there is gone.
func (s *Safety) drain(cluster string, w watch.Interface, rv string) (string, bool) {
	defer w.Stop()
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			return rv, expired(apierrors.FromObject(ev.Object))
		}
		obj, ok := ev.Object.(client.Object)
		if !ok {
			continue
		}
		rv = obj.GetResourceVersion()
		if ev.Type != watch.Bookmark {
			s.record(cluster, obj, ev.Type == watch.Deleted, false)
		}
	}
	return rv, false
}

func pause(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(200 * time.Millisecond):
	}
}

func expired(err error) bool { return apierrors.IsResourceExpired(err) || apierrors.IsGone(err) }

// relist records the current objects of a kind after a gap in its history and
// returns the list's resourceVersion. An object gone since is recorded as
// deleted at the last resourceVersion seen before the gap, since when exactly
// is unknown: a gap can hide a violation, never invent one.
func (s *Safety) relist(ctx context.Context, wc client.WithWatch, cluster string, list client.ObjectList, before string) string {
	for ctx.Err() == nil {
		fresh := list.DeepCopyObject().(client.ObjectList)
		if err := wc.List(ctx, fresh); err != nil {
			pause(ctx)
			continue
		}
		items, _ := meta.ExtractList(fresh)
		listed := map[string]bool{}
		for _, o := range items {
			obj := o.(client.Object)
			listed[obj.GetNamespace()+"/"+obj.GetName()] = true
			s.record(cluster, obj, false, true)
		}
		s.forgetMissing(cluster, kindOf(list), listed, before)
		return fresh.(metav1.ListInterface).GetResourceVersion()
	}
	return before
}

// forgetMissing records as deleted at rv the objects of a kind last seen alive
// and not in listed.
func (s *Safety) forgetMissing(cluster, kind string, listed map[string]bool, rv string) {
	at, _ := strconv.ParseUint(rv, 10, 64)
	s.mu.Lock()
	defer s.mu.Unlock()
	alive := map[string]bool{}
	for _, ev := range s.events[cluster] {
		if ev.kind == kind {
			alive[ev.key] = !ev.deleted
		}
	}
	for key, live := range alive {
		if live && !listed[key] {
			s.events[cluster] = append(s.events[cluster], safetyEvent{rv: at, kind: kind, key: key, deleted: true, listed: true})
		}
	}
}

func kindOf(list client.ObjectList) string {
	switch list.(type) {
	case *drv1alpha1.VolumeReplicationGroupList:
		return "VRG"
	case *replicationv1alpha1.VolumeGroupReplicationList:
		return "VGR"
	}
	return "VMI"
}

func (s *Safety) record(cluster string, obj client.Object, deleted, listed bool) {
	rv, _ := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	ev := safetyEvent{rv: rv, key: obj.GetNamespace() + "/" + obj.GetName(), deleted: deleted, listed: listed}
	switch o := obj.(type) {
	case *drv1alpha1.VolumeReplicationGroup:
		ev.kind, ev.app, ev.group = "VRG", o.Spec.PVCSelector.MatchLabels["app"], o.Labels[drv1alpha1.GlobalVGRLabel]
		ev.spec, ev.status = string(o.Spec.ReplicationState), string(o.Status.State)
	case *replicationv1alpha1.VolumeGroupReplication:
		ev.kind, ev.spec, ev.status = "VGR", string(o.Spec.ReplicationState), string(o.Status.State)
	case *kubevirtv1.VirtualMachineInstance:
		ev.kind, ev.deleted = "VMI", deleted || o.IsFinal()
		for _, v := range o.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				ev.claims = append(ev.claims, o.Namespace+"/"+v.PersistentVolumeClaim.ClaimName)
			}
		}
	default:
		return
	}
	s.mu.Lock()
	s.events[cluster] = append(s.events[cluster], ev)
	s.mu.Unlock()
}

// Recorded counts the events of a kind ("VRG", "VGR" or "VMI") recorded on a
// cluster, so that a test can tell a quiet recorder from a safe run.
func (s *Safety) Recorded(cluster, kind string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, ev := range s.events[cluster] {
		if ev.kind == kind {
			n++
		}
	}
	return n
}

// Violations replays what has been recorded so far.
func (s *Safety) Violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, cluster := range []string{Primary, DR} {
		evs := slices.Clone(s.events[cluster])
		found := replay(evs)
		for _, v := range found {
			out = append(out, cluster+": "+v)
		}
		if len(found) > 0 {
			out = append(out, cluster+": recorded, last first: "+trail(evs, trailLength))
		}
	}
	return out
}

// trailLength is how many of a cluster's last events a violation shows, so
// that a failure tells what led to it without the controllers' logs.
const trailLength = 40

// trail describes the last n events in resourceVersion order (replay sorted
// them), newest first.
func trail(evs []safetyEvent, n int) string {
	var b strings.Builder
	for i := len(evs) - 1; i >= 0 && i >= len(evs)-n; i-- {
		ev := evs[i]
		fmt.Fprintf(&b, "\n  rv %d %s %s", ev.rv, ev.kind, ev.key)
		switch {
		case ev.deleted:
			b.WriteString(" gone")
		case ev.kind == "VMI":
			fmt.Fprintf(&b, " mounts %v", ev.claims)
		default:
			fmt.Fprintf(&b, " spec %q status %q", ev.spec, ev.status)
		}
		if ev.listed {
			b.WriteString(" (listed)")
		}
	}
	return b.String()
}
