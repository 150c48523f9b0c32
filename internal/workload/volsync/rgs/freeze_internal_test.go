package rgs

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	groupsnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/workload/volsync"
)

// guests is a freeze.Client that counts the calls per guest.
type guests struct {
	mu             sync.Mutex
	freezes, thaws int
	frozen         bool
}

func (g *guests) Freeze(context.Context, types.NamespacedName, time.Duration) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.freezes++
	g.frozen = true
	return nil
}

func (g *guests) Unfreeze(context.Context, types.NamespacedName) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.thaws++
	g.frozen = false
	return nil
}

// applicationGroup is a source whose group asks for Application consistency,
// with one running guest; create intercepts the snapshot's creation.
func applicationGroup(t *testing.T, create func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error) (*Reconciler, client.Client, *guests, *scope) {
	t.Helper()
	rgs := newRGS("2")
	rgs.Labels = map[string]string{volsync.VRGLabel: "vrg"}
	rgs.Status.CurrentVolumeGroupSnapshot = "g-cycle"
	vrg := &drv1alpha1.VolumeReplicationGroup{ObjectMeta: metav1.ObjectMeta{Name: "vrg", Namespace: "ns",
		Labels: map[string]string{srv1alpha1.DRNamespaceLabel: "dr"}}, Spec: drv1alpha1.VolumeReplicationGroupSpec{ProtectionGroupRef: "pg"}}
	pg := &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Name: "pg", Namespace: "dr"},
		Spec: srv1alpha1.ProtectionGroupSpec{VirtualMachines: []srv1alpha1.VirtualMachineReference{{Namespace: "ns", Name: "vm"}},
			Consistency: &srv1alpha1.ConsistencySpec{Mode: srv1alpha1.ConsistencyApplication, FreezeTimeoutSeconds: 30}}}
	vmi := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "ns"},
		Status: kubevirtv1.VirtualMachineInstanceStatus{Phase: kubevirtv1.Running}}
	c := fake.NewClientBuilder().WithScheme(testScheme).WithObjects(rgs, vrg, pg, vmi).
		WithStatusSubresource(&srv1alpha1.ProtectionGroup{}).
		WithInterceptorFuncs(interceptor.Funcs{Create: create}).Build()
	g := &guests{}
	r := &Reconciler{Client: c, APIReader: c, Clock: clock.RealClock{}, Freezer: g}
	return r, c, g, &scope{rgs: rgs, now: t0}
}

func lastPoint(t *testing.T, c client.Client) *srv1alpha1.ConsistencyPoint {
	t.Helper()
	pg := &srv1alpha1.ProtectionGroup{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: "dr", Name: "pg"}, pg))
	if pg.Status.Consistency == nil {
		return nil
	}
	return pg.Status.Consistency.LastPoint
}

// A failed cut: the storage reports an error on the group snapshot taken while
// the guests were frozen. The guests are thawed, the point is recorded as
// Crash saying why, and the cycle goes on with that snapshot: the next pass
// finds it and freezes nothing again.
func TestFailedCutThawsAndRecordsACrashPoint(t *testing.T) {
	r, c, g, s := applicationGroup(t, func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if vgs, ok := obj.(*groupsnapshotv1.VolumeGroupSnapshot); ok {
			vgs.Status = &groupsnapshotv1.VolumeGroupSnapshotStatus{Error: &snapshotv1.VolumeSnapshotError{Message: ptr.To("driver refused")}}
		}
		return c.Create(ctx, obj, opts...)
	})
	vgs, err := r.takeSnapshot(context.Background(), s)
	require.NoError(t, err)
	require.Equal(t, "g-cycle", vgs.Name)
	require.Equal(t, 1, g.freezes)
	require.False(t, g.frozen, "the guests are thawed")
	p := lastPoint(t, c)
	require.NotNil(t, p)
	require.Equal(t, srv1alpha1.ConsistencyCrash, p.Consistency)
	require.Contains(t, p.Message, "VolumeGroupSnapshot g-cycle was not cut while the guests were frozen")
	require.Contains(t, p.Message, "driver refused")

	again, err := r.takeSnapshot(context.Background(), s)
	require.NoError(t, err)
	require.Equal(t, vgs.Name, again.Name)
	require.Equal(t, 1, g.freezes, "the cycle goes on with its snapshot rather than freezing again")
}

// No snapshot at all (the API server refused it): the guests are thawed, no
// point is recorded, and the error goes back so that the next pass freezes
// and tries again.
func TestRefusedSnapshotThawsAndRecordsNothing(t *testing.T) {
	r, c, g, s := applicationGroup(t, func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if _, ok := obj.(*groupsnapshotv1.VolumeGroupSnapshot); ok {
			return errors.New("admission webhook refused")
		}
		return c.Create(ctx, obj, opts...)
	})
	_, err := r.takeSnapshot(context.Background(), s)
	require.ErrorContains(t, err, "admission webhook refused")
	require.Equal(t, 1, g.freezes)
	require.False(t, g.frozen, "the guests are thawed")
	require.Nil(t, lastPoint(t, c))
}

// A source that no group asks Application consistency of takes its snapshot
// without freezing anything, and records no point.
func TestCrashConsistentCycleFreezesNothing(t *testing.T) {
	r, c, g, s := applicationGroup(t, nil)
	s.rgs.Labels = nil // not made by a VRG: no group
	vgs, err := r.takeSnapshot(context.Background(), s)
	require.NoError(t, err)
	require.Equal(t, drv1alpha1.VGSStatusCurrent, vgs.Labels[drv1alpha1.VGSStatusLabel], "the cycle's snapshot is labelled current")
	require.Equal(t, "2", vgs.Annotations[volsync.ManualTriggerAnnotation], "and names the trigger it was taken for")
	require.Zero(t, g.freezes)
	require.Nil(t, lastPoint(t, c))
}
