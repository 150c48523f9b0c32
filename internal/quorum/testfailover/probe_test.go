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
	r := &Reconciler{ProbeImage: "mirror.example/siterecovery-probe:1"}
	tf := &srv1alpha1.TestFailover{}
	tf.Name, tf.Namespace, tf.UID = "drill", "dr-production", "uid-1"
	job := r.probeJob(&scope{tf: tf}, "vm-a", &srv1alpha1.NetworkProbe{Type: srv1alpha1.ProbeHTTP, Port: 80, Path: "/"})

	spec := job.Spec.Template.Spec
	require.True(t, *spec.SecurityContext.RunAsNonRoot)
	// The image's numeric USER runs it: a fixed UID is refused where each
	// namespace gets its own UID range.
	require.Nil(t, spec.SecurityContext.RunAsUser)
	require.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, spec.SecurityContext.SeccompProfile.Type)
	for _, c := range spec.Containers {
		require.Equal(t, "mirror.example/siterecovery-probe:1", c.Image)
		require.Nil(t, c.SecurityContext.RunAsUser)
		require.Empty(t, c.Command, "the image's entrypoint, siterecovery-probe, runs the check")
		require.Equal(t, []string{"-http", "http://probe-vm-a.sr-test-drill.svc:80/", "-timeout", "60s"}, c.Args)
		require.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
		require.Equal(t, []corev1.Capability{"ALL"}, c.SecurityContext.Capabilities.Drop)
		require.False(t, c.Resources.Requests.Cpu().IsZero())
		require.False(t, c.Resources.Limits.Memory().IsZero())
	}
}
