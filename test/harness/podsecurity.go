package harness

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RestrictedNamespace creates namespace name enforcing PodSecurity's
// restricted level and checks that the API server enforces it: a pod that
// may run as root is refused. Without that check, a test that a pod of the
// product is admitted there would prove nothing.
func RestrictedNamespace(t testing.TB, c client.Client, name string) *corev1.Namespace {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"}}}
	if err := c.Create(t.Context(), ns); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	root := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "root"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	err := c.Create(t.Context(), root, client.DryRunAll)
	if err == nil || !strings.Contains(err.Error(), `violates PodSecurity "restricted:latest"`) {
		t.Fatalf("namespace %s does not enforce PodSecurity restricted (a pod that may run as root: %v)", name, err)
	}
	return ns
}
