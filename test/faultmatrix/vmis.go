package faultmatrix

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
type VMIs struct {
	namespace string
	mu        sync.Mutex
	intervals map[string][]interval // by VM name
	open      map[string]time.Time  // by cluster/VM
	events    int
}

type interval struct {
	cluster    string
	start, end time.Time
}

// RecordVMIs starts recording the instances of namespace on each of clusters
// (name → REST config) until ctx ends.
func RecordVMIs(t testing.TB, ctx context.Context, scheme *runtime.Scheme, namespace string, clusters map[string]*rest.Config) *VMIs {
	t.Helper()
	rec := newVMIs(namespace)
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
	rec := newVMIs(namespace)
	for cluster, wc := range watchClients(t, scheme, clusters) {
		w, err := wc.Watch(ctx, &kubevirtv1.VirtualMachineInstanceList{}, client.InNamespace(namespace))
		if err != nil {
			t.Fatalf("VMI watch on %s: %v", cluster, err)
		}
		go func() {
			defer w.Stop()
			for ev := range w.ResultChan() {
				if vmi, ok := ev.Object.(*kubevirtv1.VirtualMachineInstance); ok {
					rec.observe(cluster, vmi.Name, ev.Type, time.Now())
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

func newVMIs(namespace string) *VMIs {
	return &VMIs{namespace: namespace, intervals: map[string][]interval{}, open: map[string]time.Time{}}
}

func (r *VMIs) follow(ctx context.Context, wc client.WithWatch, cluster string) {
	rv := ""
	for ctx.Err() == nil {
		if rv == "" {
			rv = r.relist(ctx, wc, cluster)
			continue
		}
		w, err := wc.Watch(ctx, &kubevirtv1.VirtualMachineInstanceList{}, client.InNamespace(r.namespace),
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
func (r *VMIs) drain(cluster string, w watch.Interface, rv string) string {
	defer w.Stop()
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			if err := apierrors.FromObject(ev.Object); apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				return ""
			}
			return rv
		}
		vmi, ok := ev.Object.(*kubevirtv1.VirtualMachineInstance)
		if !ok {
			continue
		}
		rv = vmi.ResourceVersion
		if ev.Type != watch.Bookmark {
			r.observe(cluster, vmi.Name, ev.Type, time.Now())
		}
	}
	return rv
}

// relist lists the cluster's instances and makes the open intervals match.
func (r *VMIs) relist(ctx context.Context, wc client.WithWatch, cluster string) string {
	for ctx.Err() == nil {
		list := &kubevirtv1.VirtualMachineInstanceList{}
		if err := wc.List(ctx, list, client.InNamespace(r.namespace)); err != nil {
			pause(ctx)
			continue
		}
		now := time.Now()
		seen := map[string]bool{}
		for _, vmi := range list.Items {
			seen[vmi.Name] = true
			r.observe(cluster, vmi.Name, watch.Added, now)
		}
		r.closeMissing(cluster, seen, now)
		return list.ResourceVersion
	}
	return ""
}

func (r *VMIs) observe(cluster, vm string, t watch.EventType, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events++
	key := cluster + "/" + vm
	switch t {
	case watch.Added, watch.Modified:
		if _, ok := r.open[key]; !ok {
			r.open[key] = at
		}
	case watch.Deleted:
		if start, ok := r.open[key]; ok {
			r.intervals[vm] = append(r.intervals[vm], interval{cluster, start, at})
			delete(r.open, key)
		}
	}
}

func (r *VMIs) closeMissing(cluster string, keep map[string]bool, at time.Time) {
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
func (r *VMIs) SiteLost(cluster string) { r.closeMissing(cluster, nil, time.Now()) }

// Overlaps describes every time a VM had an instance on two clusters at once.
func (r *VMIs) Overlaps() []string {
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
func (r *VMIs) SawOn(cluster, vm string) bool {
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

// Events counts the changes recorded, so that a test can check the recorder
// saw its run rather than pass on an empty record.
func (r *VMIs) Events() int {
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
