package failover_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/harness"
)

// tracer records, from watches on the three clusters, when each object first
// and last reached each observable state, and counts the API requests of each
// cluster, to show where a failover's time goes. The benchmark prints it for
// its last failover when FAILOVER_BENCH_TRACE is set.
type tracer struct {
	mu     sync.Mutex
	start  time.Time
	last   map[string]string // cluster/kind/name → summary
	marks  map[string]*mark  // cluster/kind/summary → times
	events int
	reqs   map[string]harness.RequestCounts
}

type mark struct {
	first, last time.Duration
	n           int
}

func (z *zone) trace(ctx context.Context, b testing.TB) *tracer {
	tr := &tracer{last: map[string]string{}, marks: map[string]*mark{}}
	watch := func(cluster string, list client.ObjectList, ns string, sum func(any) (string, string, bool)) {
		wc, err := client.NewWithWatch(z.Clusters[cluster].Config, client.Options{Scheme: z.Scheme})
		if err != nil {
			b.Fatal(err)
		}
		w, err := wc.Watch(ctx, list, client.InNamespace(ns))
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			defer w.Stop()
			for ev := range w.ResultChan() {
				kind, s, ok := sum(ev.Object)
				if !ok {
					continue
				}
				o := ev.Object.(client.Object)
				if ev.Type == "DELETED" {
					s = "deleted"
				}
				tr.observe(cluster, kind, o.GetName(), s)
			}
		}()
	}
	for _, c := range []string{env.Primary, env.DR} {
		watch(c, &srv1alpha1.DRBDResourceList{}, env.AppNS, func(o any) (string, string, bool) {
			r, ok := o.(*srv1alpha1.DRBDResource)
			if !ok {
				return "", "", false
			}
			return "drbd", fmt.Sprintf("spec=%s/q=%v status=%s promotable=%v", r.Spec.Role, r.Spec.Quorum.Policy, r.Status.Role, r.Status.Promotable), true
		})
		watch(c, &kubevirtv1.VirtualMachineInstanceList{}, env.AppNS, func(o any) (string, string, bool) {
			v, ok := o.(*kubevirtv1.VirtualMachineInstance)
			if !ok {
				return "", "", false
			}
			return "vmi", string(v.Status.Phase), true
		})
		watch(c, &kubevirtv1.VirtualMachineList{}, env.AppNS, func(o any) (string, string, bool) {
			v, ok := o.(*kubevirtv1.VirtualMachine)
			if !ok || v.Spec.RunStrategy == nil {
				return "", "", false
			}
			return "vm", fmt.Sprintf("%s ready=%v", *v.Spec.RunStrategy, v.Status.Ready), true
		})
		watch(c, &srv1alpha1.ProtectionGroupList{}, env.Namespace, func(o any) (string, string, bool) {
			p, ok := o.(*srv1alpha1.ProtectionGroup)
			if !ok {
				return "", "", false
			}
			return "pg", fmt.Sprintf("desired=%s current=%s%s", p.Spec.DesiredState, p.Status.CurrentState, drbdSummary(p)), true
		})
	}
	watch(env.Quorum, &srv1alpha1.FailoverRequestList{}, env.Namespace, func(o any) (string, string, bool) {
		f, ok := o.(*srv1alpha1.FailoverRequest)
		if !ok {
			return "", "", false
		}
		return "fr", fmt.Sprintf("%s: %.60s", f.Status.Phase, f.Status.Message), true
	})
	return tr
}

func (tr *tracer) begin(b testing.TB, z *zone) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.reqs = map[string]harness.RequestCounts{}
	for _, c := range []string{env.Quorum, env.Primary, env.DR} {
		tr.reqs[c] = requestCounts(b, z, c)
	}
	tr.start, tr.marks = time.Now(), map[string]*mark{}
}

func (tr *tracer) observe(cluster, kind, name, s string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	id := cluster + "/" + kind + "/" + name
	if tr.last[id] == s || tr.start.IsZero() {
		tr.last[id] = s
		return
	}
	tr.last[id] = s
	tr.events++
	k := cluster + " " + kind + " " + s
	d := time.Since(tr.start)
	m := tr.marks[k]
	if m == nil {
		m = &mark{first: d}
		tr.marks[k] = m
	}
	m.last, m.n = d, m.n+1
}

func (tr *tracer) print(b testing.TB, z *zone) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, c := range []string{env.Quorum, env.Primary, env.DR} {
		total, kinds := requestCounts(b, z, c).Since(tr.reqs[c], 1)
		for _, k := range kinds {
			b.Logf("trace: %s %s", c, k)
		}
		b.Logf("trace: %s requests %4.0f", c, total)
		evs := &corev1.EventList{}
		if err := z.Client(c).List(context.Background(), evs); err == nil {
			byReason := map[string]int32{}
			for _, e := range evs.Items {
				byReason[e.Source.Component+"/"+e.ReportingController+" "+e.InvolvedObject.Kind+" "+e.Reason] += e.Count
			}
			for k, v := range byReason {
				b.Logf("trace: %s event %-60s %d", c, k, v)
			}
		}
	}
	keys := make([]string, 0, len(tr.marks))
	for k := range tr.marks {
		keys = append(keys, k)
	}
	b.Logf("trace: %d events, now %v", tr.events, time.Since(tr.start))
	sort.Slice(keys, func(i, j int) bool { return tr.marks[keys[i]].first < tr.marks[keys[j]].first })
	for _, k := range keys {
		m := tr.marks[k]
		b.Logf("trace %5d–%5d ms ×%-3d %s", m.first.Milliseconds(), m.last.Milliseconds(), m.n, k)
	}
}

// requestCounts reads kube-apiserver's apiserver_request_total per verb and resource.
func requestCounts(b testing.TB, z *zone, cluster string) harness.RequestCounts {
	counts, err := z.Clusters[cluster].RequestCounts(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return counts
}

// drbdSummary is what a copy's status.drbd says: how many replicas it reports
// Primary and promotable, and whether spec.drbd is applied.
func drbdSummary(p *srv1alpha1.ProtectionGroup) string {
	d := p.Status.DRBD
	if d == nil {
		return ""
	}
	var prim, prom int
	for _, r := range d.Replicas {
		if r.Role == string(srv1alpha1.RolePrimary) {
			prim++
		}
		if r.Promotable {
			prom++
		}
	}
	role := ""
	if p.Spec.DRBD != nil {
		role = string(p.Spec.DRBD.Role)
	}
	return fmt.Sprintf(" drbd=%s primary=%d promotable=%d applied=%v", role, prim, prom, d.AppliedGeneration == p.Generation)
}
