package remote_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/harness"
)

// delivery is one object event a source received, as its map saw it.
type delivery struct {
	namespace string // the DR namespace of the key
	name      string
	label     string // the object's DR namespace label
}

// TestCacheHoldsOnlyWhatItsDRNamespaceOwns: two DR namespaces share a
// workload cluster that also holds objects of neither. Each DR namespace's
// cache holds, and its controllers hear of, only its own objects: what
// carries its label, its ProtectionGroup copies, and the administrator's
// storage classes. An object that loses the label leaves the cache with an
// event that still names its DR namespace, so that its flow wakes.
func TestCacheHoldsOnlyWhatItsDRNamespaceOwns(t *testing.T) {
	ctx := context.Background()
	z := harness.Start(t, harness.Options{Scheme: scheme.New(), CRDDirectoryPaths: harness.DefaultCRDPaths()}, "shared")
	c := z.Clusters["shared"]
	for _, ns := range []string{"dr-a", "dr-b", "apps"} {
		require.NoError(t, c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	labelled := func(dr string) map[string]string {
		if dr == "" {
			return nil
		}
		return map[string]string{srv1alpha1.DRNamespaceLabel: dr}
	}
	vm := func(name, dr string) *kubevirtv1.VirtualMachine {
		return &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name, Labels: labelled(dr)},
			Spec: kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{}}}
	}
	for name, dr := range map[string]string{"a-vm": "dr-a", "b-vm": "dr-b", "loose-vm": ""} {
		require.NoError(t, c.Client.Create(ctx, vm(name, dr)))
	}
	for i := range 20 {
		require.NoError(t, c.Client.Create(ctx, &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: fmt.Sprintf("unrelated-%02d", i)},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		}))
	}
	for _, ns := range []string{"dr-a", "dr-b"} {
		require.NoError(t, c.Client.Create(ctx, &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "g"}}))
	}
	require.NoError(t, c.Client.Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "standard"}, Provisioner: "example.com/csi"}))

	var mu sync.Mutex
	var got []delivery
	record := func(_ context.Context, k remote.Key, o client.Object) []reconcile.Request {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, delivery{namespace: k.Namespace, name: o.GetName(), label: o.GetLabels()[srv1alpha1.DRNamespaceLabel]})
		return nil
	}
	m := remote.NewManager(scheme.New(), logr.Discard(), remote.Options{})
	m.Source("test", remote.Events{Kinds: []remote.Kind{
		{Object: &kubevirtv1.VirtualMachine{}, Map: record},
		{Object: &corev1.PersistentVolumeClaim{}, Map: record},
		{Object: &srv1alpha1.ProtectionGroup{}, Map: record},
		{Object: &storagev1.StorageClass{}, Map: record},
	}})
	keyA := remote.Key{Namespace: "dr-a", Zone: "scope-a", Cluster: "shared"}
	keyB := remote.Key{Namespace: "dr-b", Zone: "scope-b", Cluster: "shared"}
	for _, k := range []remote.Key{keyA, keyB} {
		require.NoError(t, m.Connect(ctx, k, c.Kubeconfig, remote.Limits{QPS: 50, Burst: 100, Timeout: 5 * time.Second}))
	}
	running, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	go func() { _ = m.Start(running) }()
	remotes := map[string]*remote.Remote{}
	for _, k := range []remote.Key{keyA, keyB} {
		env.Eventually(t, 30*time.Second, k.Namespace+" cache synced", func() error {
			rc, err := m.Get(k)
			remotes[k.Namespace] = rc
			return err
		})
	}

	for dr, other := range map[string]string{"dr-a": "dr-b", "dr-b": "dr-a"} {
		rc := remotes[dr]
		vms := &kubevirtv1.VirtualMachineList{}
		require.NoError(t, rc.Cached.List(ctx, vms))
		require.Equal(t, []string{dr[3:] + "-vm"}, names(vms.Items), "%s caches its own VM only", dr)
		pvcs := &corev1.PersistentVolumeClaimList{}
		require.NoError(t, rc.Cached.List(ctx, pvcs))
		require.Empty(t, pvcs.Items, "%s caches none of the 20 unrelated PVCs", dr)
		groups := &srv1alpha1.ProtectionGroupList{}
		require.NoError(t, rc.Cached.List(ctx, groups))
		require.Len(t, groups.Items, 1)
		require.Equal(t, dr, groups.Items[0].Namespace, "%s caches its own group copies, not %s's", dr, other)
		classes := &storagev1.StorageClassList{}
		require.NoError(t, rc.Cached.List(ctx, classes))
		require.Len(t, classes.Items, 1, "storage classes are the administrator's, unlabelled: every DR namespace sees them")
		// The direct client still reads what the cache does not hold.
		loose := &kubevirtv1.VirtualMachine{}
		require.NoError(t, rc.Direct.Get(ctx, client.ObjectKey{Namespace: "apps", Name: "loose-vm"}, loose))
	}
	require.Equal(t, 1.0, cachedObjects(t, keyA, "VirtualMachine"))
	require.Equal(t, 0.0, cachedObjects(t, keyA, "PersistentVolumeClaim"))
	require.Equal(t, 1.0, cachedObjects(t, keyA, "ProtectionGroup"))

	// Objects created now: the unrelated one first. Each informer delivers in
	// order, so once dr-a has heard of its own, it would have heard of the
	// unrelated one already.
	require.NoError(t, c.Client.Create(ctx, vm("late-loose", "")))
	require.NoError(t, c.Client.Create(ctx, vm("late-b", "dr-b")))
	require.NoError(t, c.Client.Create(ctx, vm("late-a", "dr-a")))
	waitDelivered(t, &mu, &got, delivery{namespace: "dr-a", name: "late-a", label: "dr-a"})
	waitDelivered(t, &mu, &got, delivery{namespace: "dr-b", name: "late-b", label: "dr-b"})

	// The label removed by hand: dr-a hears of it, with the object as it was
	// while it carried the label, and no longer caches it.
	before := len(deliveries(&mu, &got))
	patched := &kubevirtv1.VirtualMachine{}
	require.NoError(t, c.Client.Get(ctx, client.ObjectKey{Namespace: "apps", Name: "a-vm"}, patched))
	orig := patched.DeepCopy()
	delete(patched.Labels, srv1alpha1.DRNamespaceLabel)
	require.NoError(t, c.Client.Patch(ctx, patched, client.MergeFrom(orig)))
	env.Eventually(t, 30*time.Second, "a-vm left dr-a's cache", func() error {
		err := remotes["dr-a"].Cached.Get(ctx, client.ObjectKeyFromObject(patched), &kubevirtv1.VirtualMachine{})
		if err == nil {
			return fmt.Errorf("still cached")
		}
		return client.IgnoreNotFound(err)
	})
	require.Contains(t, deliveries(&mu, &got)[before:], delivery{namespace: "dr-a", name: "a-vm", label: "dr-a"},
		"the removal is delivered with the object's last labelled state")
	for _, d := range deliveries(&mu, &got) {
		require.NotContains(t, []string{"loose-vm", "late-loose"}, d.name, "an unlabelled VM reached %s", d.namespace)
		require.NotContains(t, d.name, "unrelated-", "an unrelated PVC reached %s", d.namespace)
		if d.label != "" {
			require.Equal(t, d.namespace, d.label, "%s heard of %s, which belongs to %s", d.namespace, d.name, d.label)
		}
	}
}

func names(vms []kubevirtv1.VirtualMachine) []string {
	out := make([]string, 0, len(vms))
	for _, v := range vms {
		out = append(out, v.Name)
	}
	slices.Sort(out)
	return out
}

func deliveries(mu *sync.Mutex, got *[]delivery) []delivery {
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(*got)
}

func waitDelivered(t *testing.T, mu *sync.Mutex, got *[]delivery, want delivery) {
	t.Helper()
	env.Eventually(t, 30*time.Second, "delivery of "+want.name+" to "+want.namespace, func() error {
		if slices.Contains(deliveries(mu, got), want) {
			return nil
		}
		return fmt.Errorf("not delivered")
	})
}

// cachedObjects reads the gauge of the objects a key's cache holds of a kind.
func cachedObjects(t *testing.T, k remote.Key, kind string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != remote.MetricCachedObjects {
			continue
		}
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["zone"] == k.Zone && l["cluster"] == k.Cluster && l["kind"] == kind {
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no %s series for %s %s", remote.MetricCachedObjects, k, kind)
	return 0
}
