package failover_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/test/env"
	kubevirtsim "github.com/siterecovery/siterecovery/test/sim/kubevirt"
)

// The failover write floor: what any correct planned failover of the zone's
// groups must pay on the machine it runs on, made by a plain client on the same
// API servers, while the zone's controllers run idle beside it. Per group and
// VM, in the flow's order and with its fan-out (10 writes in flight per
// cluster):
//
//  1. stop: one intent write on the source's local ProtectionGroup (the quorum
//     tier must tell the source cluster that a failover began: nothing there
//     knows it); per VM the run strategy write that asks KubeVirt to stop it,
//     and KubeVirt's deletion of the VMI and its VM status write (KubeVirt
//     makes these whoever asks).
//  2. demote: per VM the replica's role write and the status writes of both
//     agents (the local agent reports the new role, the peer's agent the
//     peer's role: the target may promote only on a status that shows its
//     peer Secondary). No intent write: the source cluster sees for itself
//     when its VMs have stopped, so the stop's intent can carry the demotion.
//  3. promote: one intent write on the target's group (only the quorum tier
//     sees both clusters, so only it knows when the source is Secondary and
//     the target up to date); per VM the role write and both agents' status
//     writes.
//  4. start: per VM the run strategy write, KubeVirt's VMI creation and its
//     VM status write. No intent write: the target cluster sees for itself
//     when its replicas are Primary, so the promotion's intent can carry it.
//
// That is 12 writes per VM and 2 per group: one intent write per step that
// needs the quorum tier's knowledge. No events, no group or request status,
// no reads: objects are read before the clock starts, and each write's answer
// feeds the next.
//
// The floor's objects are copies of the zone's (same specs and statuses, so
// the same sizes) in a namespace of their own, which no controller acts on:
// the KubeVirt simulator skips its IgnoreLabel, the agents skip nodes that do
// not exist, and the floor's groups list VMs of an empty namespace and desire
// no state, so pg-controller has nothing to do for them. The floor and the
// product then run turn by turn on the same servers under the same load.
const (
	floorNS     = "floor"
	floorRefsNS = "floor-refs" // the namespace the floor groups' VMs would be in: empty
	// floorIntent is the annotation a floor intent write sets on a group.
	floorIntent = "bench.siterecovery.io/intent"
)

// floorSet is the floor's copy of the zone's groups.
type floorSet struct {
	groups [][]string // VM names per group
	names  []string   // group names
}

// newFloor copies the zone's groups (names, and the VMs of each) as they are
// now, running on the primary, into the floor namespace of both workload
// clusters.
func (z *zone) newFloor(t testing.TB, names []string, groups [][]string) *floorSet {
	ctx := context.Background()
	for _, c := range []string{env.Primary, env.DR} {
		for _, ns := range []string{floorNS, floorRefsNS} {
			require.NoError(t, z.Client(c).Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
		}
	}
	fs := &floorSet{groups: groups, names: names}
	for _, vms := range groups {
		for _, name := range vms {
			for _, c := range []string{env.Primary, env.DR} {
				z.copyToFloor(t, c, &kubevirtv1.VirtualMachine{}, name)
				z.copyToFloor(t, c, &srv1alpha1.DRBDResource{}, drbdName(name))
			}
			z.copyToFloor(t, env.Primary, &kubevirtv1.VirtualMachineInstance{}, name)
		}
	}
	for gi, vms := range groups {
		refs := make([]srv1alpha1.VirtualMachineReference, len(vms))
		for i, name := range vms {
			refs[i] = srv1alpha1.VirtualMachineReference{Namespace: floorRefsNS, Name: name}
		}
		for _, c := range []string{env.Primary, env.DR} {
			require.NoError(t, z.Client(c).Create(ctx, &srv1alpha1.ProtectionGroup{
				ObjectMeta: metav1.ObjectMeta{Namespace: floorNS, Name: names[gi]},
				Spec:       srv1alpha1.ProtectionGroupSpec{VirtualMachines: refs},
			}))
		}
	}
	return fs
}

// copyToFloor copies the zone's object name of cluster c, spec and status,
// into the floor namespace, out of every controller's reach.
func (z *zone) copyToFloor(t testing.TB, c string, obj client.Object, name string) {
	ctx := context.Background()
	cl := z.Client(c)
	require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: env.AppNS, Name: name}, obj))
	status := obj.DeepCopyObject().(client.Object)
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[kubevirtsim.IgnoreLabel] = "true"
	delete(labels, srv1alpha1.ProtectionGroupLabel)
	obj.SetLabels(labels)
	obj.SetNamespace(floorNS)
	obj.SetResourceVersion("")
	obj.SetUID("")
	obj.SetOwnerReferences(nil)
	obj.SetFinalizers(nil)
	obj.SetCreationTimestamp(metav1.Time{})
	if d, ok := obj.(*srv1alpha1.DRBDResource); ok {
		d.Spec.NodeName = "floor-" + d.Spec.NodeName
	}
	require.NoError(t, cl.Create(ctx, obj))
	status.SetNamespace(floorNS)
	status.SetResourceVersion(obj.GetResourceVersion())
	status.SetUID(obj.GetUID())
	status.SetLabels(obj.GetLabels())
	status.SetOwnerReferences(nil)
	status.SetFinalizers(nil)
	if d, ok := status.(*srv1alpha1.DRBDResource); ok {
		d.Spec.NodeName = "floor-" + d.Spec.NodeName
	}
	// A kind without a status subresource kept its status at creation.
	if err := cl.Status().Update(ctx, status); !apierrors.IsNotFound(err) {
		require.NoError(t, err)
	}
}

// floorRound is one failover's objects, read before the clock starts.
type floorRound struct {
	src, tgt         client.Client
	srcPGs, tgtPGs   []*srv1alpha1.ProtectionGroup
	srcVMs, tgtVMs   []*kubevirtv1.VirtualMachine
	srcVMIs          []*kubevirtv1.VirtualMachineInstance
	srcDRBD, tgtDRBD []*srv1alpha1.DRBDResource
}

// read reads the floor's objects for a failover from src to tgt.
func (fs *floorSet) read(t testing.TB, z *zone, src, tgt string) *floorRound {
	ctx := context.Background()
	f := &floorRound{src: z.Client(src), tgt: z.Client(tgt)}
	for gi, vms := range fs.groups {
		sp, tp := &srv1alpha1.ProtectionGroup{}, &srv1alpha1.ProtectionGroup{}
		key := client.ObjectKey{Namespace: floorNS, Name: fs.names[gi]}
		require.NoError(t, f.src.Get(ctx, key, sp))
		require.NoError(t, f.tgt.Get(ctx, key, tp))
		f.srcPGs, f.tgtPGs = append(f.srcPGs, sp), append(f.tgtPGs, tp)
		for _, name := range vms {
			key := client.ObjectKey{Namespace: floorNS, Name: name}
			dkey := client.ObjectKey{Namespace: floorNS, Name: drbdName(name)}
			sv, tv, si := &kubevirtv1.VirtualMachine{}, &kubevirtv1.VirtualMachine{}, &kubevirtv1.VirtualMachineInstance{}
			sd, td := &srv1alpha1.DRBDResource{}, &srv1alpha1.DRBDResource{}
			for _, get := range []error{f.src.Get(ctx, key, sv), f.tgt.Get(ctx, key, tv), f.src.Get(ctx, key, si),
				f.src.Get(ctx, dkey, sd), f.tgt.Get(ctx, dkey, td)} {
				require.NoError(t, get, "reading floor %s", name)
			}
			f.srcVMs, f.tgtVMs, f.srcVMIs = append(f.srcVMs, sv), append(f.tgtVMs, tv), append(f.srcVMIs, si)
			f.srcDRBD, f.tgtDRBD = append(f.srcDRBD, sd), append(f.tgtDRBD, td)
		}
	}
	return f
}

// run makes the failover's writes, step after step as the flow would; the
// groups move at once, each step of every group before the next step.
func (f *floorRound) run(ctx context.Context) error {
	n := len(f.srcVMs)
	steps := []struct {
		intent func(g int) error
		vm     func(i int) error
	}{
		{func(g int) error { return setIntent(ctx, f.src, f.srcPGs[g], "stop-and-demote") },
			func(i int) error { return stopVM(ctx, f.src, f.srcVMs[i], f.srcVMIs[i]) }},
		{nil,
			func(i int) error {
				return moveRole(ctx, f.src, f.srcDRBD[i], srv1alpha1.RoleSecondary, f.tgt, f.tgtDRBD[i], true)
			}},
		{func(g int) error { return setIntent(ctx, f.tgt, f.tgtPGs[g], "promote-and-run") },
			func(i int) error {
				return moveRole(ctx, f.tgt, f.tgtDRBD[i], srv1alpha1.RolePrimary, f.src, f.srcDRBD[i], false)
			}},
		{nil,
			func(i int) error { return startVM(ctx, f.tgt, f.tgtVMs[i], f.srcVMIs[i]) }},
	}
	for _, s := range steps {
		if s.intent != nil {
			if err := flow.ForEach(parallelWrites, len(f.srcPGs), s.intent); err != nil {
				return err
			}
		}
		if err := flow.ForEach(parallelWrites, n, s.vm); err != nil {
			return err
		}
	}
	return nil
}

const parallelWrites = 10

// setIntent is one intent write on a group's local copy.
func setIntent(ctx context.Context, c client.Client, pg *srv1alpha1.ProtectionGroup, intent string) error {
	before := pg.DeepCopy()
	if pg.Annotations == nil {
		pg.Annotations = map[string]string{}
	}
	pg.Annotations[floorIntent] = intent
	return c.Patch(ctx, pg, client.MergeFrom(before))
}

func stopVM(ctx context.Context, c client.Client, vm *kubevirtv1.VirtualMachine, vmi *kubevirtv1.VirtualMachineInstance) error {
	if err := setRunStrategy(ctx, c, vm, kubevirtv1.RunStrategyHalted); err != nil {
		return err
	}
	if err := c.Delete(ctx, vmi); err != nil {
		return err
	}
	return setVMStatus(ctx, c, vm, false)
}

func startVM(ctx context.Context, c client.Client, vm *kubevirtv1.VirtualMachine, template *kubevirtv1.VirtualMachineInstance) error {
	if err := setRunStrategy(ctx, c, vm, kubevirtv1.RunStrategyAlways); err != nil {
		return err
	}
	vmi := &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: vm.Namespace, Name: vm.Name, Labels: template.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(vm, kubevirtv1.VirtualMachineGroupVersionKind)}},
		Spec: template.Spec, Status: template.Status,
	}
	if err := c.Create(ctx, vmi); err != nil {
		return err
	}
	return setVMStatus(ctx, c, vm, true)
}

func setRunStrategy(ctx context.Context, c client.Client, vm *kubevirtv1.VirtualMachine, s kubevirtv1.VirtualMachineRunStrategy) error {
	before := vm.DeepCopy()
	vm.Spec.RunStrategy = ptr.To(s)
	return c.Patch(ctx, vm, client.MergeFrom(before))
}

func setVMStatus(ctx context.Context, c client.Client, vm *kubevirtv1.VirtualMachine, running bool) error {
	before := vm.DeepCopy()
	vm.Status.Created, vm.Status.Ready = running, running
	vm.Status.PrintableStatus = kubevirtv1.VirtualMachineStatusStopped
	ready := corev1.ConditionFalse
	if running {
		vm.Status.PrintableStatus, ready = kubevirtv1.VirtualMachineStatusRunning, corev1.ConditionTrue
	}
	vm.Status.Conditions = []kubevirtv1.VirtualMachineCondition{{Type: kubevirtv1.VirtualMachineReady, Status: ready,
		LastTransitionTime: metav1.Now()}}
	return c.Status().Patch(ctx, vm, client.MergeFrom(before))
}

// moveRole sets role on one replica, reports it in that replica's status, and
// reports the peer's new role in the other replica's status.
func moveRole(ctx context.Context, c client.Client, res *srv1alpha1.DRBDResource, role srv1alpha1.DRBDRole,
	peerC client.Client, peer *srv1alpha1.DRBDResource, peerPromotable bool) error {
	before := res.DeepCopy()
	res.Spec.Role, res.Spec.Quorum = role, srv1alpha1.QuorumForRole(role)
	if err := c.Patch(ctx, res, client.MergeFrom(before)); err != nil {
		return err
	}
	res.Status.Role, res.Status.Promotable = string(role), role == srv1alpha1.RolePrimary
	res.Status.ObservedGeneration = res.Generation
	if err := c.Status().Update(ctx, res); err != nil {
		return fmt.Errorf("status of %s: %w", res.Name, err)
	}
	for j := range peer.Status.Peers {
		peer.Status.Peers[j].PeerRole = string(role)
	}
	peer.Status.Promotable = peerPromotable
	return peerC.Status().Update(ctx, peer)
}
