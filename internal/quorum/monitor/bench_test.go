package monitor

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// memCache is an in-memory stand-in for a remote cache: DRBDResources indexed by
// their protection-group label, listed without copies as UnsafeDisableDeepCopy
// lets the informer cache do.
type memCache struct {
	client.Reader
	byGroup map[string][]srv1alpha1.DRBDResource
}

func (c *memCache) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	o := &client.ListOptions{}
	o.ApplyOptions(opts)
	group, _ := o.LabelSelector.RequiresExactMatch(srv1alpha1.ProtectionGroupLabel)
	list.(*srv1alpha1.DRBDResourceList).Items = c.byGroup[group]
	return nil
}

// BenchmarkMonitorPass is one pass of the monitor over 200 groups of 10 VMs:
// 2,000 DRBDResources on each of the two clusters, read from in-memory caches
// and aggregated against the previous status. Nothing changes between passes,
// so no pass may write.
func BenchmarkMonitorPass(b *testing.B) {
	const groups, vms = 200, 10
	prim, dr := &memCache{byGroup: map[string][]srv1alpha1.DRBDResource{}}, &memCache{byGroup: map[string][]srv1alpha1.DRBDResource{}}
	pgs := make([]*srv1alpha1.ProtectionGroup, groups)
	for g := range groups {
		name := fmt.Sprintf("pg-%03d", g)
		pgs[g] = &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "dr", Name: name}}
		for v := range vms {
			vm := fmt.Sprintf("%s-vm-%02d", name, v)
			pgs[g].Spec.VirtualMachines = append(pgs[g].Spec.VirtualMachines, srv1alpha1.VirtualMachineReference{Namespace: "apps", Name: vm})
			p := newPair(vm)
			prim.byGroup[name] = append(prim.byGroup[name], *p.act)
			dr.byGroup[name] = append(dr.byGroup[name], *p.rep)
		}
	}
	statuses := make([]srv1alpha1.ReplicationGroupStatusStatus, groups)
	ctx := context.Background()
	pass := func(now int) (writes int) {
		for g, pg := range pgs {
			act, _ := listSide(ctx, prim, remote.Key{Namespace: "dr", Cluster: "primary"}, pg.Name)
			rep, _ := listSide(ctx, dr, remote.Key{Namespace: "dr", Cluster: "dr"}, pg.Name)
			out := Aggregate(Input{Group: pg, Generation: 1, ObjectiveSeconds: 300, Previous: &statuses[g],
				Active: act, Replicas: []Side{rep}, Now: t0.Add(secs(now))})
			if out.Changed {
				statuses[g] = out.Status
				writes++
			}
		}
		return writes
	}
	if w := pass(0); w != groups {
		b.Fatalf("first pass wrote %d statuses, want %d", w, groups)
	}
	writes := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		writes += pass(i + 1)
	}
	b.ReportMetric(float64(writes)/float64(b.N), "writes/op")
	if writes != 0 {
		b.Fatalf("%d writes while nothing changed", writes)
	}
}
