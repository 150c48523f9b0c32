package drpolicy_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/drpolicy"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
	remotefake "github.com/siterecovery/siterecovery/internal/quorum/remote/fake"
	"github.com/siterecovery/siterecovery/internal/scheme"
)

// Workload clusters without csi-addons' kinds (here: a scheme that lacks
// them) validate a VolSync zone's policy, whose peer classes pair
// StorageClasses only; an Offloaded zone's policy, which pairs
// VolumeGroupReplicationClasses, holds instead.
func TestPolicyNeedsGroupClassesOnlyOnOffloaded(t *testing.T) {
	for _, tc := range []struct {
		backend   srv1alpha1.StorageBackend
		validated metav1.ConditionStatus
	}{
		{srv1alpha1.BackendVolSync, metav1.ConditionTrue},
		{srv1alpha1.BackendOffloaded, metav1.ConditionFalse},
	} {
		t.Run(string(tc.backend), func(t *testing.T) {
			ctx := context.Background()
			s := scheme.New()
			zone := &srv1alpha1.ProtectionZone{ObjectMeta: metav1.ObjectMeta{Namespace: "dr", Name: "zone"},
				Spec: srv1alpha1.ProtectionZoneSpec{StorageBackend: tc.backend, Clusters: []srv1alpha1.ZoneCluster{{Name: "a"}, {Name: "b"}}}}
			policy := &drv1alpha1.DRPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "dr", Name: "policy"},
				Spec: drv1alpha1.DRPolicySpec{DRClusters: []string{"a", "b"}, SchedulingInterval: "5m"}}
			quorum := remotefake.NewClient(s, zone, policy)
			workload := runtime.NewScheme()
			for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, srv1alpha1.AddToScheme, drv1alpha1.AddToScheme, kubevirtv1.AddToScheme} {
				require.NoError(t, add(workload))
			}
			clusters := remotefake.New(workload)
			for _, c := range []string{"a", "b"} {
				clusters.Add(remote.Key{Namespace: "dr", Zone: "zone", Cluster: c},
					&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Provisioner: "csi.example"})
			}
			r := &drpolicy.Reconciler{Client: quorum, Remote: clusters, Recorder: record.NewFakeRecorder(16)}
			_, _ = r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(policy)})

			got := &drv1alpha1.DRPolicy{}
			require.NoError(t, quorum.Get(ctx, client.ObjectKeyFromObject(policy), got))
			c := meta.FindStatusCondition(got.Status.Conditions, srv1alpha1.ConditionValidated)
			require.NotNil(t, c)
			require.Equal(t, tc.validated, c.Status, c.Message)
			if tc.validated == metav1.ConditionTrue {
				require.Len(t, got.Status.PeerClasses, 1)
				require.Equal(t, "fast", got.Status.PeerClasses[0].StorageClassName)
			} else {
				require.Contains(t, c.Message, "VolumeGroupReplicationClasses")
			}
		})
	}
}
