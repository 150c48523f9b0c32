package drpc

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
)

func drpc(name string, action drv1alpha1.DRAction, failover, preferred string) drv1alpha1.DRPlacementControl {
	return drv1alpha1.DRPlacementControl{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{drv1alpha1.GlobalVGRLabel: "global-rg"}},
		Spec:       drv1alpha1.DRPlacementControlSpec{Action: action, FailoverCluster: failover, PreferredCluster: preferred},
	}
}

func TestPendingPeers(t *testing.T) {
	self := drpc("app-1", drv1alpha1.ActionFailover, "c2", "c1")
	deleting := drpc("app-4", "", "", "c1")
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	for _, tc := range []struct {
		name  string
		self  drv1alpha1.DRPlacementControl
		peers []drv1alpha1.DRPlacementControl
		want  []string
	}{
		{"all agree", self, []drv1alpha1.DRPlacementControl{self, drpc("app-2", drv1alpha1.ActionFailover, "c2", "c1")}, nil},
		{"peer not updated yet", self, []drv1alpha1.DRPlacementControl{self, drpc("app-2", "", "", "c1"), drpc("app-3", drv1alpha1.ActionFailover, "c2", "")}, []string{"ns/app-2"}},
		{"failover to another cluster", self, []drv1alpha1.DRPlacementControl{drpc("app-2", drv1alpha1.ActionFailover, "c3", "c1")}, []string{"ns/app-2"}},
		{"relocate compares preferredCluster", drpc("app-1", drv1alpha1.ActionRelocate, "c2", "c2"),
			[]drv1alpha1.DRPlacementControl{drpc("app-2", drv1alpha1.ActionRelocate, "", "c3"), drpc("app-3", drv1alpha1.ActionRelocate, "c1", "c2")}, []string{"ns/app-2"}},
		{"a deleting peer does not count", self, []drv1alpha1.DRPlacementControl{deleting}, nil},
		{"sorted", self, []drv1alpha1.DRPlacementControl{drpc("b", "", "", ""), drpc("a", "", "", "")}, []string{"ns/a", "ns/b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, pendingPeers(&tc.self, tc.peers))
		})
	}
}

func TestPeerTrigger(t *testing.T) {
	p := peerTrigger()
	base := drpc("app-1", "", "", "c1")
	unlabelled := base.DeepCopy()
	unlabelled.Labels = nil
	for _, tc := range []struct {
		name   string
		mutate func(d *drv1alpha1.DRPlacementControl)
		old    *drv1alpha1.DRPlacementControl
		want   bool
	}{
		{"action", func(d *drv1alpha1.DRPlacementControl) { d.Spec.Action = drv1alpha1.ActionFailover }, &base, true},
		{"failoverCluster", func(d *drv1alpha1.DRPlacementControl) { d.Spec.FailoverCluster = "c2" }, &base, true},
		{"preferredCluster", func(d *drv1alpha1.DRPlacementControl) { d.Spec.PreferredCluster = "c2" }, &base, true},
		{"status only", func(d *drv1alpha1.DRPlacementControl) { d.Status.Phase = drv1alpha1.DRStateDeployed }, &base, false},
		{"label added", func(d *drv1alpha1.DRPlacementControl) { d.Labels = base.Labels }, unlabelled, true},
		{"unlabelled action", func(d *drv1alpha1.DRPlacementControl) { d.Spec.Action = drv1alpha1.ActionFailover }, unlabelled, false},
		{"deletion started", func(d *drv1alpha1.DRPlacementControl) { d.DeletionTimestamp = &metav1.Time{Time: time.Now()} }, &base, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.old.DeepCopy()
			tc.mutate(n)
			require.Equal(t, tc.want, p.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: n}))
		})
	}
	require.True(t, p.Delete(event.DeleteEvent{Object: &base}))
	require.False(t, p.Delete(event.DeleteEvent{Object: unlabelled}))
	require.False(t, p.Create(event.CreateEvent{Object: &base}))
}

func TestParseInterval(t *testing.T) {
	for in, want := range map[string]time.Duration{"0m": 0, "5m": 5 * time.Minute, "1h": time.Hour, "2d": 48 * time.Hour} {
		got, ok := parseInterval(in)
		require.True(t, ok, in)
		require.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "m", "5s", "x5m"} {
		_, ok := parseInterval(bad)
		require.False(t, ok, bad)
	}
}
