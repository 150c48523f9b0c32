package faultmatrix

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// VMIs records, per VM, when a VirtualMachineInstance existed on each
// workload cluster, from watch events, so that Overlaps can say whether a VM
// ever ran on two clusters at once. A watch sees every change, where a sampler
// could miss a brief overlap between two reads.
//
// It follows runs that stop API servers: each cluster's watch resumes where it
// ended, and lists again when the history is gone, closing the intervals of
// instances deleted meanwhile at the moment the gap is noticed. A cluster
// whose API server is down changes no instance, so an instance seen before an
// outage counts as running through it, unless the test declares the whole
// site lost (SiteLost).
type VMIs = Presence

// Presence records, per object name, when an object of one kind was present
// (and, with a Kind's Live, in the state that counts) on each workload
// cluster: VMIs records VirtualMachineInstances, and RecordPresence any kind,
// such as a VolumeGroupReplication while it is Primary.
type Presence struct {
	namespace string
	kind      Kind
	mu        sync.Mutex
	intervals map[string][]interval // by VM name
	open      map[string]time.Time  // by cluster/VM
	events    int
	// started are told of each object that became live on a cluster
	// (OnStart).
	started []func(cluster, name string)
}

type interval struct {
	cluster    string
	start, end time.Time
}

// Kind is what a Presence records: objects of one list type, present while
// Live says so (always, when Live is nil).
type Kind struct {
	List func() client.ObjectList
	Live func(client.Object) bool
}

var vmiKind = Kind{List: func() client.ObjectList { return &kubevirtv1.VirtualMachineInstanceList{} }}

// RecordVMIs starts recording the instances of namespace on each of clusters
// (name → REST config) until ctx ends.
func RecordVMIs(t testing.TB, ctx context.Context, scheme *runtime.Scheme, namespace string, clusters map[string]*rest.Config) *VMIs {
	t.Helper()
	return RecordPresence(t, ctx, scheme, vmiKind, namespace, clusters)
}

// RecordPresence records the objects of kind in namespace on each of clusters
// as RecordVMIs does the instances, through API server outages.
func RecordPresence(t testing.TB, ctx context.Context, scheme *runtime.Scheme, kind Kind, namespace string, clusters map[string]*rest.Config) *Presence {
	t.Helper()
	rec := newPresence(namespace, kind)
	for cluster, wc := range watchClients(t, scheme, clusters) {
		go rec.follow(ctx, wc, cluster)
	}
	return rec
}

// WatchVMIs records like RecordVMIs for runs whose API servers stay up: one
// watch a cluster, started before it returns, so that nothing the test does
// after the call escapes the record (RecordVMIs's first list runs in the
// background). The watch is not resumed: a run that stops an API server wants
// RecordVMIs.
func WatchVMIs(t testing.TB, ctx context.Context, scheme *runtime.Scheme, namespace string, clusters map[string]*rest.Config) *VMIs {
	t.Helper()
	rec := newPresence(namespace, vmiKind)
	for cluster, wc := range watchClients(t, scheme, clusters) {
		w, err := wc.Watch(ctx, &kubevirtv1.VirtualMachineInstanceList{}, client.InNamespace(namespace))
		if err != nil {
			t.Fatalf("VMI watch on %s: %v", cluster, err)
		}
		go func() {
			defer w.Stop()
			for ev := range w.ResultChan() {
				if vmi, ok := ev.Object.(*kubevirtv1.VirtualMachineInstance); ok {
					rec.observe(cluster, vmi.Name, ev.Type, true, time.Now())
				}
			}
		}()
	}
	return rec
}

func watchClients(t testing.TB, scheme *runtime.Scheme, clusters map[string]*rest.Config) map[string]client.WithWatch {
	t.Helper()
	out := make(map[string]client.WithWatch, len(clusters))
	for cluster, cfg := range clusters {
		wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
		if err != nil {
			t.Fatalf("VMI recorder for %s: %v", cluster, err)
		}
		out[cluster] = wc
	}
	return out
}

func newPresence(namespace string, kind Kind) *Presence {
	return &Presence{namespace: namespace, kind: kind, intervals: map[string][]interval{}, open: map[string]time.Time{}}
}

func (r *Presence) live(obj client.Object) bool { return r.kind.Live == nil || r.kind.Live(obj) }

func (r *Presence) follow(ctx context.Context, wc client.WithWatch, cluster string) {
	rv := ""
	for ctx.Err() == nil {
		if rv == "" {
			rv = r.relist(ctx, wc, cluster)
			continue
		}
		w, err := wc.Watch(ctx, r.kind.List(), client.InNamespace(r.namespace),
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
		switch {
		case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
			rv = ""
		case err != nil:
			pause(ctx)
		default:
			rv = r.drain(cluster, w, rv)
		}
	}
}

// drain records a watch's events; it returns the last resourceVersion seen,
// or "" when the history from there is gone.
func (r *Presence) drain(cluster string, w watch.Interface, rv string) string {
	defer w.Stop()
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			if err := apierrors.FromObject(ev.Object); apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				return ""
			}
			return rv
		}
		obj, ok := ev.Object.(client.Object)
		if !ok {
			continue
		}
		rv = obj.GetResourceVersion()
		if ev.Type != watch.Bookmark {
			r.observe(cluster, obj.GetName(), ev.Type, r.live(obj), time.Now())
		}
	}
	return rv
}

// relist lists the cluster's instances and makes the open intervals match.
func (r *Presence) relist(ctx context.Context, wc client.WithWatch, cluster string) string {
	for ctx.Err() == nil {
		list := r.kind.List()
		if err := wc.List(ctx, list, client.InNamespace(r.namespace)); err != nil {
			pause(ctx)
			continue
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			pause(ctx)
			continue
		}
		now := time.Now()
		seen := map[string]bool{}
		for _, o := range items {
			if obj, ok := o.(client.Object); ok && r.live(obj) {
				seen[obj.GetName()] = true
				r.observe(cluster, obj.GetName(), watch.Added, true, now)
			}
		}
		r.closeMissing(cluster, seen, now)
		return list.GetResourceVersion()
	}
	return ""
}

// observe records an event of an object; an object no longer live counts as
// gone.
func (r *Presence) observe(cluster, vm string, t watch.EventType, live bool, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events++
	key := cluster + "/" + vm
	switch {
	case (t == watch.Added || t == watch.Modified) && live:
		if _, ok := r.open[key]; !ok {
			r.open[key] = at
			for _, fn := range r.started {
				fn(cluster, vm)
			}
		}
	case t == watch.Added || t == watch.Modified || t == watch.Deleted:
		if start, ok := r.open[key]; ok {
			r.intervals[vm] = append(r.intervals[vm], interval{cluster, start, at})
			delete(r.open, key)
		}
	}
}

// OnStart has fn told of each object that becomes live on a cluster from
// now on. It runs under the recorder's lock: it must return at once and not
// call the recorder.
func (r *Presence) OnStart(fn func(cluster, name string)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started = append(r.started, fn)
}

func (r *Presence) closeMissing(cluster string, keep map[string]bool, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for key, start := range r.open {
		c, vm := splitKey(key)
		if c == cluster && !keep[vm] {
			r.intervals[vm] = append(r.intervals[vm], interval{cluster, start, at})
			delete(r.open, key)
		}
	}
}

// SiteLost ends every instance of a cluster now: the site is powered off (or
// as good as), so its VMs no longer run whatever its etcd still holds.
func (r *Presence) SiteLost(cluster string) { r.closeMissing(cluster, nil, time.Now()) }

// Overlaps describes every time a VM had an instance on two clusters at once.
func (r *Presence) Overlaps() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	all := map[string][]interval{}
	for vm, iv := range r.intervals {
		all[vm] = append(all[vm], iv...)
	}
	now := time.Now()
	for key, start := range r.open {
		cluster, vm := splitKey(key)
		all[vm] = append(all[vm], interval{cluster, start, now})
	}
	var out []string
	for vm, iv := range all {
		for i := range iv {
			for j := i + 1; j < len(iv); j++ {
				a, b := iv[i], iv[j]
				if a.cluster != b.cluster && a.start.Before(b.end) && b.start.Before(a.end) {
					out = append(out, fmt.Sprintf("%s on %s %s-%s and %s %s-%s", vm, a.cluster, clock(a.start), clock(a.end),
						b.cluster, clock(b.start), clock(b.end)))
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// SawOn reports whether a VM had an instance on a cluster at some point.
func (r *Presence) SawOn(cluster, vm string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.open[cluster+"/"+vm]; ok {
		return true
	}
	for _, iv := range r.intervals[vm] {
		if iv.cluster == cluster {
			return true
		}
	}
	return false
}

// Ended reports whether a VM's instance on a cluster ended at some point
// (deleted, or no longer live).
func (r *Presence) Ended(cluster, vm string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, iv := range r.intervals[vm] {
		if iv.cluster == cluster {
			return true
		}
	}
	return false
}

// EndedSince reports whether an instance of a VM on a cluster ended after t
// (deleted, or no longer live).
func (r *Presence) EndedSince(cluster, vm string, t time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, iv := range r.intervals[vm] {
		if iv.cluster == cluster && iv.end.After(t) {
			return true
		}
	}
	return false
}

// Events counts the changes recorded, so that a test can check the recorder
// saw its run rather than pass on an empty record.
func (r *Presence) Events() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events
}

func clock(t time.Time) string { return t.Format("15:04:05.000") }

func splitKey(key string) (string, string) {
	for i := range key {
		if key[i] == '/' {
			return key[:i], key[i+1:]
		}
	}
	return key, ""
}

func pause(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(200 * time.Millisecond):
	}
}
