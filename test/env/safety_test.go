package env

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
)

// The replay must flag each unsafe ordering, or Safety could never fail.
func TestReplay(t *testing.T) {
	const g = "global-rg"
	vrg := func(rv uint64, spec, status string) safetyEvent {
		return safetyEvent{rv: rv, kind: "VRG", key: "apps/app-1", app: "app-1", group: g, spec: spec, status: status}
	}
	vgr := func(rv uint64, spec, status string) safetyEvent {
		return safetyEvent{rv: rv, kind: "VGR", key: "ramen-system/" + g, spec: spec, status: status}
	}
	vmi := func(rv uint64, deleted bool) safetyEvent {
		return safetyEvent{rv: rv, kind: "VMI", key: "apps/app-1-vm", deleted: deleted, claims: []string{"apps/app-1-pvc"}}
	}
	for _, tc := range []struct {
		name   string
		events []safetyEvent
		want   []string
	}{
		{"stop, then secondary", []safetyEvent{vrg(1, "primary", "Primary"), vgr(2, "primary", "Primary"), vmi(3, false),
			vmi(4, true), vrg(5, "secondary", "Unknown"), vgr(6, "secondary", "Primary"), vgr(7, "secondary", "Secondary"), vrg(8, "secondary", "Secondary")}, nil},
		// Events arrive per kind; resourceVersion orders them.
		{"out of order", []safetyEvent{vrg(5, "secondary", "Unknown"), vmi(4, true), vrg(1, "primary", "Primary"), vmi(3, false)}, nil},
		{"secondary while running", []safetyEvent{vrg(1, "primary", "Primary"), vmi(2, false), vrg(3, "secondary", "Unknown"), vrg(4, "secondary", "Secondary")},
			[]string{"VRG apps/app-1 asked to become secondary while [apps/app-1-vm] run (rv 3)", "VRG apps/app-1 reported Secondary while [apps/app-1-vm] run (rv 4)"}},
		{"VGR demoted under a VM", []safetyEvent{vrg(1, "primary", "Primary"), vgr(2, "primary", "Primary"), vmi(3, false), vgr(4, "secondary", "Primary")},
			[]string{"VGR ramen-system/global-rg asked to become secondary while [apps/app-1-vm] run (rv 4)"}},
		{"VM boots on a secondary VGR", []safetyEvent{vrg(1, "primary", "Unknown"), vgr(2, "primary", "Secondary"), vmi(3, false)},
			[]string{`VMI apps/app-1-vm started on apps/app-1-pvc while VGR ramen-system/global-rg is spec "primary", status "Secondary" (rv 3)`}},
		{"first deploy has no VGR yet", []safetyEvent{vmi(1, false), vrg(2, "primary", "Unknown"), vgr(3, "primary", "")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) { require.Equal(t, tc.want, replay(tc.events)) })
	}
}

// A violation comes with what the recorder saw before it, newest first, so
// that a failure can be understood without the controllers' logs.
func TestTrailShowsRecentEventsNewestFirst(t *testing.T) {
	evs := []safetyEvent{
		{rv: 1, kind: "VMI", key: "apps/app-1-vm", claims: []string{"apps/app-1-pvc"}, listed: true},
		{rv: 2, kind: "VRG", key: "apps/app-1", spec: "secondary", status: "Primary"},
		{rv: 3, kind: "VMI", key: "apps/app-1-vm", deleted: true},
	}
	require.Equal(t, "\n  rv 3 VMI apps/app-1-vm gone"+
		"\n  rv 2 VRG apps/app-1 spec \"secondary\" status \"Primary\"", trail(evs, 2))
	require.Contains(t, trail(evs, 3), "rv 1 VMI apps/app-1-vm mounts [apps/app-1-pvc] (listed)")
}

// A restarted API server ends a watch with 410 Expired. A VMI that stopped in
// that gap must be recorded as gone after it was last seen running, or it
// would seem to run forever and flag the next, correct, secondary VRG.
func TestVMIGoneInWatchGapStopsRunning(t *testing.T) {
	s := &Safety{events: map[string][]safetyEvent{}}
	vrg := &drv1alpha1.VolumeReplicationGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app-1", ResourceVersion: "5"}}
	vrg.Spec.PVCSelector.MatchLabels = map[string]string{"app": "app-1"}
	vrg.Spec.ReplicationState = drv1alpha1.Primary
	s.record(DR, vrg, false, true)

	w := watch.NewFake()
	go func() {
		w.Add(&kubevirtv1.VirtualMachineInstance{
			ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app-1-vm", ResourceVersion: "10"},
			Spec: kubevirtv1.VirtualMachineInstanceSpec{Volumes: []kubevirtv1.Volume{{Name: "disk",
				VolumeSource: kubevirtv1.VolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
					PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: AppPVCName("app-1")}}}}}},
		})
		expired := apierrors.NewResourceExpired("too old resource version: 10 (40)")
		w.Error(&expired.ErrStatus)
	}()
	// The relist after the gap no longer has the VMI: it stopped meanwhile.
	wc := fake.NewClientBuilder().WithScheme(scheme.New()).Build()
	s.consume(context.Background(), wc, DR, &kubevirtv1.VirtualMachineInstanceList{}, w, "5")

	secondary := vrg.DeepCopy()
	secondary.ResourceVersion, secondary.Spec.ReplicationState = "50", drv1alpha1.Secondary
	s.record(DR, secondary, false, false)
	require.Empty(t, s.Violations())
	require.Equal(t, 2, s.Recorded(DR, "VMI"), "the VMI's start and its gone-in-the-gap end")
}
