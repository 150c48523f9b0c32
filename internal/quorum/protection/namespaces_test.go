package protection_test

import (
	"context"
	"testing"

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

// A request for a VM of a namespace the DR namespace may not protect (made
// before protection.allowedNamespaces changed, or where the chart's admission
// policy is missing) fails in Validating, before anything exists on a
// workload cluster, and says which value to change; a VM of a listed
// namespace goes on.
func TestProtectionIsolationRefusesUnlistedNamespaces(t *testing.T) {
	for _, c := range []struct {
		name    string
		allowed []string
		failed  string // the request's message, "" when it goes on
	}{
		{"listed", []string{"billing", "apps"}, ""},
		{"unlisted", []string{"billing"}, "VirtualMachine apps/web may not be protected from DR namespace dr: its namespace is not in protection.allowedNamespaces of the quorum-control-plane release (quorum-manager --protection-allowed-namespaces: billing)"},
		{"none listed", []string{}, "no application namespace may be protected from DR namespace dr: protection.allowedNamespaces of its quorum-control-plane release (quorum-manager --protection-allowed-namespaces) is empty"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			req := &srv1alpha1.ProtectionRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "dr", Name: "protect-web", Finalizers: []string{protection.Finalizer}},
				Spec: srv1alpha1.ProtectionRequestSpec{VirtualMachine: srv1alpha1.VirtualMachineReference{Namespace: "apps", Name: "web"},
					ZoneRef: srv1alpha1.LocalObjectReference{Name: "zone"}, ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: "g"}}}
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
				Options: protection.Options{AllowedNamespaces: c.allowed}}

			_, _ = r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(req)})
			got := &srv1alpha1.ProtectionRequest{}
			require.NoError(t, quorum.Get(ctx, client.ObjectKeyFromObject(req), got))
			var ready *metav1.Condition
			for i := range got.Status.Conditions {
				if got.Status.Conditions[i].Type == srv1alpha1.ConditionReady {
					ready = &got.Status.Conditions[i]
				}
			}
			require.NotNil(t, ready)
			if c.failed == "" {
				// The check passes; the VM, which has no template here, is refused next.
				require.Equal(t, "UnsupportedVolume", ready.Reason, ready.Message)
				return
			}
			require.Equal(t, srv1alpha1.ProtectionFailed, got.Status.Phase)
			require.Equal(t, srv1alpha1.ReasonNamespaceNotAllowed, ready.Reason)
			require.Contains(t, ready.Message, c.failed)
		})
	}
}
