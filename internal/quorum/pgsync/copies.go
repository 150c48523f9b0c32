package pgsync

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// syncCopy makes the cluster's workload copy carry the quorum copy's VMs,
// replication settings and boot plan. A missing copy is created with spec.desiredState running
// on the active cluster and stopped elsewhere; from then on desiredState belongs
// to the failover-controller and is never part of what pg-sync applies.
func (r *Reconciler) syncCopy(ctx context.Context, s *scope, rem *remote.Remote, c *clusterResult) error {
	g := s.group
	cp := &srv1alpha1.ProtectionGroup{}
	err := rem.Cached.Get(ctx, client.ObjectKeyFromObject(g), cp)
	switch {
	case apierrors.IsNotFound(err):
		if cp, err = r.createCopy(ctx, s, rem, c.name); err != nil {
			return err
		}
		c.wrote = true
	case err != nil:
		return flow.Transient(srv1alpha1.ReasonReadFailed, fmt.Errorf("cluster %s: reading ProtectionGroup copy: %w", c.name, err))
	}
	if drift := copyDrift(g, cp); len(drift) > 0 {
		if cp, err = r.applyCopy(ctx, g, rem); err != nil {
			return flow.Transient(srv1alpha1.ReasonWriteFailed, fmt.Errorf("cluster %s: applying ProtectionGroup copy: %w", c.name, err))
		}
		c.wrote = true
		// Entries other field managers own survive an apply; report them.
		if drift := copyDrift(g, cp); len(drift) > 0 {
			c.drift = append(c.drift, "ProtectionGroup copy: "+strings.Join(drift, "; ")+" (set by another field manager)")
		}
	}
	c.currentState = cp.Status.CurrentState
	c.vms = cp.Status.VirtualMachines
	if cp.Status.Consistency != nil {
		c.point = cp.Status.Consistency.LastPoint
	}
	return nil
}

// createCopy creates a copy holding only the labels and desiredState, under an
// Update operation: the Apply that follows then owns virtualMachines,
// replication and boot alone, so that entries the quorum copy drops are
// removed again.
func (r *Reconciler) createCopy(ctx context.Context, s *scope, rem *remote.Remote, cluster string) (*srv1alpha1.ProtectionGroup, error) {
	desired := srv1alpha1.StateStopped
	if cluster == s.group.Spec.ActiveCluster {
		desired = srv1alpha1.StateRunning
	}
	cp := &srv1alpha1.ProtectionGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.group.Namespace, Name: s.group.Name, Labels: pgSyncLabels(s.group)},
		Spec:       srv1alpha1.ProtectionGroupSpec{DesiredState: desired},
	}
	err := rem.Direct.Create(ctx, cp, client.FieldOwner(FieldOwner))
	if apierrors.IsAlreadyExists(err) {
		// The cache has not seen it yet; read it through the API server.
		err = rem.Direct.Get(ctx, client.ObjectKeyFromObject(cp), cp)
	}
	if err != nil {
		return nil, flow.Transient(srv1alpha1.ReasonWriteFailed, fmt.Errorf("cluster %s: creating ProtectionGroup copy: %w", cluster, err))
	}
	return cp, nil
}

// applyCopy server-side applies the fields pg-sync owns and returns the copy the
// API server answered with.
func (r *Reconciler) applyCopy(ctx context.Context, g *srv1alpha1.ProtectionGroup, rem *remote.Remote) (*srv1alpha1.ProtectionGroup, error) {
	u, err := copyApplyConfiguration(g)
	if err != nil {
		return nil, err
	}
	if err := rem.Direct.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return nil, err
	}
	cp := &srv1alpha1.ProtectionGroup{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cp); err != nil {
		return nil, err
	}
	return cp, nil
}

// copyApplyConfiguration is the apply configuration of a workload copy: the
// pg-sync labels, spec.virtualMachines, spec.replication, spec.boot and
// spec.consistency (which the copy's VolSync cycles read), and
// nothing else — in particular never spec.desiredState. A group without a
// boot plan leaves spec.boot out: the apply then removes the plan pg-sync
// wrote before, so the copy starts every VM at once again.
func copyApplyConfiguration(g *srv1alpha1.ProtectionGroup) (*unstructured.Unstructured, error) {
	vms := make([]any, 0, len(g.Spec.VirtualMachines))
	for _, vm := range g.Spec.VirtualMachines {
		vms = append(vms, map[string]any{"namespace": vm.Namespace, "name": vm.Name})
	}
	replication, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&g.Spec.Replication)
	if err != nil {
		return nil, err
	}
	labels := map[string]any{}
	for k, v := range pgSyncLabels(g) {
		labels[k] = v
	}
	spec := map[string]any{"virtualMachines": vms, "replication": replication}
	if g.Spec.Boot != nil {
		boot, err := runtime.DefaultUnstructuredConverter.ToUnstructured(g.Spec.Boot)
		if err != nil {
			return nil, err
		}
		spec["boot"] = boot
	}
	if g.Spec.Consistency != nil {
		consistency, err := runtime.DefaultUnstructuredConverter.ToUnstructured(g.Spec.Consistency)
		if err != nil {
			return nil, err
		}
		spec["consistency"] = consistency
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"namespace": g.Namespace, "name": g.Name, "labels": labels},
		"spec":     spec,
	}}
	u.SetGroupVersionKind(srv1alpha1.GroupVersion.WithKind("ProtectionGroup"))
	return u, nil
}

// copyDrift lists how a workload copy differs from the quorum copy in the
// fields pg-sync owns. VM order does not matter.
func copyDrift(g, cp *srv1alpha1.ProtectionGroup) []string {
	var drift []string
	labels := pgSyncLabels(g)
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if cp.Labels[k] != labels[k] {
			drift = append(drift, fmt.Sprintf("label %s is %q", k, cp.Labels[k]))
		}
	}
	want, have := refKeys(g.Spec.VirtualMachines), refKeys(cp.Spec.VirtualMachines)
	if missing := minus(want, have); len(missing) > 0 {
		drift = append(drift, "missing VMs "+strings.Join(missing, ", "))
	}
	if extra := minus(have, want); len(extra) > 0 {
		drift = append(drift, "extra VMs "+strings.Join(extra, ", "))
	}
	if cp.Spec.Replication != g.Spec.Replication {
		drift = append(drift, fmt.Sprintf("replication %+v, want %+v", cp.Spec.Replication, g.Spec.Replication))
	}
	if !equality.Semantic.DeepEqual(cp.Spec.Boot, g.Spec.Boot) {
		drift = append(drift, fmt.Sprintf("boot plan %s, want %s", bootSummary(cp.Spec.Boot), bootSummary(g.Spec.Boot)))
	}
	if !equality.Semantic.DeepEqual(cp.Spec.Consistency, g.Spec.Consistency) {
		drift = append(drift, fmt.Sprintf("consistency %s, want %s", consistencySummary(cp.Spec.Consistency), consistencySummary(g.Spec.Consistency)))
	}
	return drift
}

// bootSummary names a boot plan's stages and onStageTimeout for a drift
// message; a differing gate, timeout or step shows as the same summary. It
// never prints a step's env, which is the user's to keep out of statuses.
func bootSummary(p *srv1alpha1.BootPlan) string {
	if p == nil {
		return "none"
	}
	names := make([]string, 0, len(p.Stages))
	for _, st := range p.Stages {
		names = append(names, st.Name)
	}
	return fmt.Sprintf("[%s] onStageTimeout %s", strings.Join(names, ","), p.OnStageTimeout)
}

func refKeys(refs []srv1alpha1.VirtualMachineReference) []string {
	out := make([]string, 0, len(refs))
	for _, ref := range refs {
		out = append(out, vmKey(ref.Namespace, ref.Name))
	}
	slices.Sort(out)
	return out
}

// minus returns the entries of a that are not in b.
func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
