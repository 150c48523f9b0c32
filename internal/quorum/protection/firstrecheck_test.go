package protection_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/protection"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
	remotefake "github.com/siterecovery/siterecovery/internal/quorum/remote/fake"
	"github.com/siterecovery/siterecovery/internal/scheme"
)

// The reconcile that makes a request Protected schedules its first claim
// re-check itself. The request's own status write does not wake it again, so
// a request whose workload objects had already settled would otherwise never
// notice a claim an admin removed.
func TestProtectedRequestSchedulesItsFirstRecheck(t *testing.T) {
	ctx := context.Background()
	const every = 10 * time.Second
	req := &srv1alpha1.ProtectionRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "dr", Name: "protect-web", Finalizers: []string{protection.Finalizer}},
		Spec: srv1alpha1.ProtectionRequestSpec{VirtualMachine: srv1alpha1.VirtualMachineReference{Namespace: "apps", Name: "web"},
			ZoneRef: srv1alpha1.LocalObjectReference{Name: "zone"}, ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: "g"}},
		Status: srv1alpha1.ProtectionRequestStatus{Phase: srv1alpha1.ProtectionAddingToGroup, Port: 7000,
			Volumes: []srv1alpha1.ProtectedVolume{{Minor: 1000}}}}
	zone := &srv1alpha1.ProtectionZone{ObjectMeta: metav1.ObjectMeta{Namespace: "dr", Name: "zone"},
		Spec: srv1alpha1.ProtectionZoneSpec{StorageBackend: srv1alpha1.BackendDRBD, Clusters: []srv1alpha1.ZoneCluster{
			{Name: "primary", Role: srv1alpha1.ClusterRolePrimary}, {Name: "dr", Role: srv1alpha1.ClusterRoleDR}}}}
	s := scheme.New()
	quorum := remotefake.NewClient(s, req, zone)
	clusters := remotefake.New(s)
	clusters.Add(remote.Key{Namespace: "dr", Zone: "zone", Cluster: "primary"},
		&kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"}})
	clusters.Add(remote.Key{Namespace: "dr", Zone: "zone", Cluster: "dr"})
	r := &protection.Reconciler{Client: quorum, APIReader: quorum, Remote: clusters, Recorder: record.NewFakeRecorder(32),
		Options: protection.Options{ClaimRecheckInterval: every}}

	res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(req)})
	require.NoError(t, err)
	got := &srv1alpha1.ProtectionRequest{}
	require.NoError(t, quorum.Get(ctx, client.ObjectKeyFromObject(req), got))
	require.Equal(t, srv1alpha1.ProtectionProtected, got.Status.Phase)
	assert.GreaterOrEqual(t, res.RequeueAfter, every*8/10, "the first re-check is one interval (-20 %) away")
	assert.LessOrEqual(t, res.RequeueAfter, every*12/10, "the first re-check is one interval (+20 %) away")
}
