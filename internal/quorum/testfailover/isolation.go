package testfailover

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// NetworkPolicyName is the policy that isolates the test namespace.
const NetworkPolicyName = "siterecovery-test-isolation"

// ensureIsolation creates the isolated namespace and, before anything can run in
// it, the NetworkPolicy that confines it: every pod may talk to pods of the same
// namespace only, plus DNS (the probe Job resolves the test VM's Service name).
func (r *Reconciler) ensureIsolation(ctx context.Context, s *scope, rc *remote.Remote) error {
	cluster := s.tf.Spec.TargetCluster
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.namespace(), Labels: labelsOf(s.tf, "")}}
	if err := rc.Direct.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return remoteErr(cluster, "creating namespace "+ns.Name, err)
	}
	sameNamespace := []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}
	dnsPort := intstr.FromInt32(53)
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: NetworkPolicyName, Labels: labelsOf(s.tf, "")},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: sameNamespace}},
			Egress: []networkingv1.NetworkPolicyEgressRule{
				{To: sameNamespace},
				{
					To: []networkingv1.NetworkPolicyPeer{{
						NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "kube-system"}},
						PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}},
					}},
					Ports: []networkingv1.NetworkPolicyPort{
						{Protocol: ptr.To(corev1.ProtocolUDP), Port: &dnsPort},
						{Protocol: ptr.To(corev1.ProtocolTCP), Port: &dnsPort},
					},
				},
			},
		},
	}
	if err := rc.Direct.Create(ctx, np); err != nil && !apierrors.IsAlreadyExists(err) {
		return remoteErr(cluster, "creating NetworkPolicy "+np.Name, err)
	}
	return nil
}
