package monitor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
	remotefake "github.com/siterecovery/siterecovery/internal/quorum/remote/fake"
	"github.com/siterecovery/siterecovery/internal/scheme"
)

// The monitor's read of both sides of a group, through Reconcile, against
// in-memory clusters: what each cluster's state makes of the group's
// ReplicationGroupStatus.
func TestReadSides(t *testing.T) {
	type side struct {
		state  remote.State // Reachable if empty
		gone   bool         // never connected
		unsync bool         // connected, cache not synced
	}
	for _, c := range []struct {
		name        string
		primary, dr side
		// staleActive makes the primary's DRBDResource report bytes not yet
		// replicated: what its cache would show had it lost its link.
		staleActive bool

		wantRequeue time.Duration // when the status is not written
		wantHealth  srv1alpha1.ReplicationHealth
		wantReady   bool
		// wantDisk and wantOutOfSync are the volume's disk state (the active
		// side's) and the bytes still to replicate.
		wantDisk      string
		wantOutOfSync int64
	}{
		{name: "both clusters readable: in sync and ready", wantHealth: srv1alpha1.HealthHealthy, wantReady: true, wantDisk: "UpToDate"},
		{name: "a readable active side that has not replicated everything is not ready", staleActive: true,
			wantHealth: srv1alpha1.HealthSyncing, wantReady: false, wantDisk: "UpToDate", wantOutOfSync: 1 << 20},
		{name: "an unreachable active cluster's cache is not trusted: the replica's view decides", staleActive: true,
			primary: side{state: remote.Unreachable}, wantHealth: srv1alpha1.HealthHealthy, wantReady: true, wantDisk: ""},
		{name: "a DR cluster whose cache is syncing defers the evaluation", dr: side{unsync: true}, wantRequeue: time.Second},
		{name: "a DR cluster without connection cannot be failed over to", dr: side{gone: true},
			wantHealth: srv1alpha1.HealthHealthy, wantReady: false, wantDisk: "UpToDate"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			p := newPair("vm-00")
			if c.staleActive {
				p.act.Status.Peers[0].Volumes[0].OutOfSyncBytes = 1 << 20
			}
			group := &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "dr", Name: "pg", UID: "pg-uid"},
				Spec: srv1alpha1.ProtectionGroupSpec{ZoneRef: &srv1alpha1.LocalObjectReference{Name: "zone"}, ActiveCluster: "primary",
					VirtualMachines: []srv1alpha1.VirtualMachineReference{{Namespace: "apps", Name: "vm-00"}}}}
			zone := &srv1alpha1.ProtectionZone{ObjectMeta: metav1.ObjectMeta{Namespace: "dr", Name: "zone"},
				Spec: srv1alpha1.ProtectionZoneSpec{StorageBackend: srv1alpha1.BackendDRBD, Clusters: []srv1alpha1.ZoneCluster{
					{Name: "primary", Role: srv1alpha1.ClusterRolePrimary}, {Name: "dr", Role: srv1alpha1.ClusterRoleDR}}}}
			s := scheme.New()
			quorum := remotefake.NewClient(s, group, zone)
			clusters := remotefake.New(s)
			for name, sd := range map[string]side{"primary": c.primary, "dr": c.dr} {
				if sd.gone {
					continue
				}
				k := remote.Key{Namespace: "dr", Zone: "zone", Cluster: name}
				obj := p.act
				if name == "dr" {
					obj = p.rep
				}
				clusters.Add(k, obj)
				if sd.state != "" {
					clusters.SetState(k, sd.state)
				}
				clusters.SetSynced(k, !sd.unsync)
			}
			r := &Reconciler{Client: quorum, Remote: clusters, Clock: clocktesting.NewFakeClock(t0), Metrics: defaultMetrics}

			res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(group)})
			require.NoError(t, err)
			rgs := &srv1alpha1.ReplicationGroupStatus{}
			require.NoError(t, quorum.Get(ctx, client.ObjectKeyFromObject(group), rgs))
			if c.wantRequeue > 0 {
				require.Equal(t, c.wantRequeue, res.RequeueAfter)
				require.Nil(t, rgs.Status.LastUpdateTime, "nothing is written while a cache syncs")
				return
			}
			st := rgs.Status
			require.Len(t, st.VirtualMachines, 1)
			vm := st.VirtualMachines[0]
			require.Equal(t, c.wantReady, vm.FailoverReady, "VM failoverReady")
			require.Equal(t, c.wantReady, st.FailoverReady, "group failoverReady")
			require.Equal(t, c.wantHealth, st.Health)
			require.Len(t, vm.Volumes, 1)
			require.Equal(t, c.wantDisk, vm.Volumes[0].DiskState, "the active side's disk")
			require.Equal(t, c.wantOutOfSync, vm.Volumes[0].OutOfSyncBytes)
		})
	}
}
