package testfailover

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// TestProbeJobIsRestricted checks what PodSecurity "restricted" demands of a
// probe Job's pod, so that it runs in isolated namespaces that enforce that
// level, and that it has resources and the configured image.
func TestProbeJobIsRestricted(t *testing.T) {
	r := &Reconciler{ProbeImage: "mirror.example/busybox:1.36"}
	tf := &srv1alpha1.TestFailover{}
	tf.Name, tf.Namespace, tf.UID = "drill", "dr-production", "uid-1"
	job := r.probeJob(&scope{tf: tf}, "vm-a", &srv1alpha1.NetworkProbe{Type: srv1alpha1.ProbeHTTP, Port: 80, Path: "/"})

	spec := job.Spec.Template.Spec
	require.True(t, *spec.SecurityContext.RunAsNonRoot)
	require.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, spec.SecurityContext.SeccompProfile.Type)
	for _, c := range spec.Containers {
		require.Equal(t, "mirror.example/busybox:1.36", c.Image)
		require.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
		require.Equal(t, []corev1.Capability{"ALL"}, c.SecurityContext.Capabilities.Drop)
		require.False(t, c.Resources.Requests.Cpu().IsZero())
		require.False(t, c.Resources.Limits.Memory().IsZero())
	}
}
