package protection_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/protection"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
	remotefake "github.com/siterecovery/siterecovery/internal/quorum/remote/fake"
	"github.com/siterecovery/siterecovery/internal/scheme"
)

// The load of a ProtectionRequest through Reconcile, against in-memory
// clusters: the zone decides which clusters the request works on, and a
// cluster that cannot be used yet is a wait, not a failure.
func TestLoad(t *testing.T) {
	type cluster struct {
		name   string
		role   srv1alpha1.ClusterRole
		state  remote.State // Reachable if empty
		gone   bool         // never connected
		unsync bool         // connected, cache not synced
	}
	zoneOf := func(backend srv1alpha1.StorageBackend, cs ...cluster) *srv1alpha1.ProtectionZone {
		z := &srv1alpha1.ProtectionZone{ObjectMeta: metav1.ObjectMeta{Namespace: "dr", Name: "zone"},
			Spec: srv1alpha1.ProtectionZoneSpec{StorageBackend: backend}}
		for _, c := range cs {
			z.Spec.Clusters = append(z.Spec.Clusters, srv1alpha1.ZoneCluster{Name: c.name, Role: c.role})
		}
		return z
	}
	prim := cluster{name: "primary", role: srv1alpha1.ClusterRolePrimary}
	dr := cluster{name: "dr", role: srv1alpha1.ClusterRoleDR}
	for _, c := range []struct {
		name     string
		backend  srv1alpha1.StorageBackend
		clusters []cluster
		noZone   bool
		target   string

		wantPhase   srv1alpha1.ProtectionPhase
		wantReason  string
		wantMessage string
		wantRequeue time.Duration
	}{
		{name: "a missing zone fails the request", noZone: true, clusters: []cluster{prim, dr},
			wantPhase: srv1alpha1.ProtectionFailed, wantReason: srv1alpha1.ReasonZoneNotFound,
			wantMessage: "ProtectionZone zone not found in namespace dr; create it or fix spec.zoneRef"},
		{name: "a zone of another backend fails the request", backend: srv1alpha1.BackendOffloaded, clusters: []cluster{prim, dr},
			wantPhase: srv1alpha1.ProtectionFailed, wantReason: protection.ReasonUnsupportedBackend,
			wantMessage: "ProtectionZone zone uses storage backend Offloaded; ProtectionRequests need the DRBD backend"},
		{name: "two DR clusters and no targetCluster fail the request",
			clusters:  []cluster{prim, dr, {name: "dr2", role: srv1alpha1.ClusterRoleDR}},
			wantPhase: srv1alpha1.ProtectionFailed, wantReason: protection.ReasonInvalidSpec,
			wantMessage: "zone zone has 2 DR clusters [dr dr2]; set spec.targetCluster to one of them"},
		{name: "a targetCluster that is not a DR cluster fails the request", target: "primary", clusters: []cluster{prim, dr},
			wantPhase: srv1alpha1.ProtectionFailed, wantReason: protection.ReasonInvalidSpec,
			wantMessage: `spec.targetCluster "primary" is not a DR cluster of zone zone (DR clusters: [dr])`},
		{name: "a DR cluster without connection is waited for", clusters: []cluster{prim, {name: "dr", role: srv1alpha1.ClusterRoleDR, gone: true}},
			wantPhase: srv1alpha1.ProtectionValidating, wantReason: srv1alpha1.ReasonClusterUnreachable, wantRequeue: 5 * time.Second,
			wantMessage: "waiting for the workload clusters: cluster not connected: dr has no connection (is it in the zone, with a valid kubeconfig Secret?)"},
		{name: "a primary whose cache is syncing is waited for", clusters: []cluster{{name: "primary", role: srv1alpha1.ClusterRolePrimary, unsync: true}, dr},
			wantPhase: srv1alpha1.ProtectionValidating, wantReason: srv1alpha1.ReasonClusterUnreachable, wantRequeue: 5 * time.Second,
			wantMessage: "waiting for the workload clusters: cluster not connected: primary cache has not synced yet"},
		{name: "both clusters connected: validation reads the VM on the primary", clusters: []cluster{prim, dr},
			wantPhase: srv1alpha1.ProtectionFailed, wantReason: protection.ReasonVMNotFound,
			wantMessage: "VirtualMachine apps/web not found on primary cluster primary"},
		{name: "the target named among several DR clusters is used", target: "dr2",
			clusters:  []cluster{prim, dr, {name: "dr2", role: srv1alpha1.ClusterRoleDR, gone: true}},
			wantPhase: srv1alpha1.ProtectionValidating, wantReason: srv1alpha1.ReasonClusterUnreachable, wantRequeue: 5 * time.Second,
			wantMessage: "waiting for the workload clusters: cluster not connected: dr2 has no connection (is it in the zone, with a valid kubeconfig Secret?)"},
		{name: "an unreachable primary is connected but does not answer", clusters: []cluster{{name: "primary", role: srv1alpha1.ClusterRolePrimary, state: remote.Unreachable}, dr},
			wantPhase: srv1alpha1.ProtectionValidating, wantReason: srv1alpha1.ReasonClusterUnreachable, wantRequeue: 5 * time.Second,
			wantMessage: "cluster primary is unreachable: reading the quorum access settings failed; protection resumes when it answers again"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			backend := c.backend
			if backend == "" {
				backend = srv1alpha1.BackendDRBD
			}
			req := &srv1alpha1.ProtectionRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "dr", Name: "protect-web"},
				Spec: srv1alpha1.ProtectionRequestSpec{VirtualMachine: srv1alpha1.VirtualMachineReference{Namespace: "apps", Name: "web"},
					ZoneRef: srv1alpha1.LocalObjectReference{Name: "zone"}, ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: "g"},
					TargetCluster: c.target}}
			objs := []client.Object{req}
			if !c.noZone {
				objs = append(objs, zoneOf(backend, c.clusters...))
			}
			s := scheme.New()
			quorum := remotefake.NewClient(s, objs...)
			clusters := remotefake.New(s)
			for _, cl := range c.clusters {
				if cl.gone {
					continue
				}
				k := remote.Key{Namespace: "dr", Zone: "zone", Cluster: cl.name}
				clusters.Add(k)
				if cl.state != "" {
					clusters.SetState(k, cl.state)
				}
				clusters.SetSynced(k, !cl.unsync)
			}
			r := &protection.Reconciler{Client: quorum, APIReader: quorum, Remote: clusters, Recorder: record.NewFakeRecorder(32),
				Options: protection.Options{Clock: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}}

			res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(req)})
			if c.wantReason == protection.ReasonRequestFailed {
				require.Error(t, err, "a failed call to a cluster is retried with backoff")
			} else {
				require.NoError(t, err)
				require.Equal(t, c.wantRequeue, res.RequeueAfter)
			}
			got := &srv1alpha1.ProtectionRequest{}
			require.NoError(t, quorum.Get(ctx, client.ObjectKeyFromObject(req), got))
			require.Equal(t, c.wantPhase, got.Status.Phase)
			ready := meta.FindStatusCondition(got.Status.Conditions, srv1alpha1.ConditionReady)
			require.NotNil(t, ready)
			require.Equal(t, metav1.ConditionFalse, ready.Status)
			require.Equal(t, c.wantReason, ready.Reason)
			require.Equal(t, c.wantMessage, ready.Message)
			require.Contains(t, got.Finalizers, protection.Finalizer, "the finalizer is set before any cluster is written")
		})
	}
}
