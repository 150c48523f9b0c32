package alerts

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// ScraperNamespace and ScraperName are Prometheus's ServiceAccount.
const (
	ScraperNamespace = "monitoring"
	ScraperName      = "prometheus"
)

// ScraperToken gives Prometheus the identity it has where the chart's
// ServiceMonitor is used: a ServiceAccount whose ClusterRole may get /metrics
// (kube-prometheus-stack's Prometheus ClusterRole grants that non-resource
// URL: prometheus-community/helm-charts,
// charts/kube-prometheus-stack/templates/prometheus/clusterrole.yaml). It
// returns a token of it, which quorum-manager's secure metrics endpoint has
// this cluster's API server review and authorize.
func ScraperToken(ctx context.Context, cs kubernetes.Interface) (string, error) {
	create := func(err error) error {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}
	meta := metav1.ObjectMeta{Name: ScraperName}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ScraperNamespace}}, metav1.CreateOptions{}); create(err) != nil {
		return "", err
	}
	if _, err := cs.CoreV1().ServiceAccounts(ScraperNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta}, metav1.CreateOptions{}); create(err) != nil {
		return "", err
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "siterecovery-test-prometheus"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); create(err) != nil {
		return "", err
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ScraperNamespace, Name: ScraperName}}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); create(err) != nil {
		return "", err
	}
	tr, err := cs.CoreV1().ServiceAccounts(ScraperNamespace).CreateToken(ctx, ScraperName,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(24 * 3600))}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token of %s/%s: %w", ScraperNamespace, ScraperName, err)
	}
	return tr.Status.Token, nil
}
