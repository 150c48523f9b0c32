package failover_test

import (
	"context"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/siterecovery/siterecovery/test/env"
)

// recordVMIsThroughOutages is recordVMIs for runs that stop API servers: each
// cluster's watch resumes where it ended, and lists again when the history is
// gone, closing the intervals of instances deleted meanwhile at the moment the
// gap is noticed. A cluster whose API server is down changes no instance, so
// an instance seen before an outage counts as running through it, unless the
// test declares the whole site lost (siteLost).
func (z *zone) recordVMIsThroughOutages() *vmiRecorder {
	rec := &vmiRecorder{intervals: map[string][]interval{}, open: map[string]time.Time{}}
	ctx, cancel := context.WithCancel(z.ctx)
	z.t.Cleanup(cancel)
	for _, cluster := range []string{env.Primary, env.DR} {
		wc, err := client.NewWithWatch(z.Clusters[cluster].Config, client.Options{Scheme: z.Scheme})
		require.NoError(z.t, err)
		go rec.follow(ctx, wc, cluster)
	}
	return rec
}

func (r *vmiRecorder) follow(ctx context.Context, wc client.WithWatch, cluster string) {
	rv := ""
	for ctx.Err() == nil {
		if rv == "" {
			rv = r.relist(ctx, wc, cluster)
			continue
		}
		w, err := wc.Watch(ctx, &kubevirtv1.VirtualMachineInstanceList{}, client.InNamespace(env.AppNS),
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
		switch {
		case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
			rv = ""
		case err != nil:
			wait(ctx)
		default:
			rv = r.drain(cluster, w, rv)
		}
	}
}

// drain records a watch's events; it returns the last resourceVersion seen,
// or "" when the history from there is gone.
func (r *vmiRecorder) drain(cluster string, w watch.Interface, rv string) string {
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
func (r *vmiRecorder) relist(ctx context.Context, wc client.WithWatch, cluster string) string {
	for ctx.Err() == nil {
		list := &kubevirtv1.VirtualMachineInstanceList{}
		if err := wc.List(ctx, list, client.InNamespace(env.AppNS)); err != nil {
			wait(ctx)
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

func (r *vmiRecorder) closeMissing(cluster string, keep map[string]bool, at time.Time) {
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

// siteLost ends every instance of a cluster now: the site is powered off (or
// as good as), so its VMs no longer run whatever its etcd still holds.
func (r *vmiRecorder) siteLost(cluster string) { r.closeMissing(cluster, nil, time.Now()) }

func wait(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(200 * time.Millisecond):
	}
}
