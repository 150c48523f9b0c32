package chartrender

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// AdmissionPolicies returns the ValidatingAdmissionPolicies and their bindings
// among rendered chart objects: the protectionzone chart's confirmation of
// unplanned and forced failovers, which the API server evaluates itself.
func AdmissionPolicies(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, obj := range objs {
		switch obj.GetKind() {
		case "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
			out = append(out, obj)
		}
	}
	return out
}

// ZoneWebhookProbe is a ProtectionZone in namespace whose kubeconfig Secret
// does not exist: once the ProtectionZone webhook serves, a dry-run creation
// of it is refused with "does not exist in namespace" rather than a
// connection error.
func ZoneWebhookProbe(namespace string) *srv1alpha1.ProtectionZone {
	return &srv1alpha1.ProtectionZone{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "webhook-probe"},
		Spec: srv1alpha1.ProtectionZoneSpec{StorageBackend: srv1alpha1.BackendDRBD,
			Clusters: []srv1alpha1.ZoneCluster{
				{Name: "a", Role: srv1alpha1.ClusterRolePrimary, KubeconfigSecretRef: srv1alpha1.SecretKeyReference{Name: "no-such-secret"}},
				{Name: "b", Role: srv1alpha1.ClusterRoleDR, KubeconfigSecretRef: srv1alpha1.SecretKeyReference{Name: "no-such-secret"}},
			},
			StorageMappings: []srv1alpha1.StorageMapping{{SourceStorageClass: "standard", TargetStorageClass: "standard"}}},
	}
}
