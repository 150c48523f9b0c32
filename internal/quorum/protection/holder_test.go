package protection

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// TestHolderPodIsRestricted checks what PodSecurity "restricted" demands of
// the replica holder, so that it runs in application namespaces that enforce
// that level, and that it has resources and the configured image.
func TestHolderPodIsRestricted(t *testing.T) {
	r := &Reconciler{Options: Options{HolderImage: "mirror.example/pause:3.10"}}
	req := &srv1alpha1.ProtectionRequest{}
	req.Name = "vm-a"
	req.Spec.VirtualMachine.Namespace, req.Spec.VirtualMachine.Name = "apps", "vm-a"
	req.Spec.ZoneRef.Name = "production"
	req.Status.Volumes = []srv1alpha1.ProtectedVolume{{Disk: "root", Volume: 0, SourcePVC: "root-pvc"}}
	pod := r.holderPod(&scope{req: req}, side{primary: true}, "node-1")

	sc := pod.Spec.SecurityContext
	require.NotNil(t, sc)
	require.True(t, *sc.RunAsNonRoot)
	require.Nil(t, sc.RunAsUser, "the image's own non-root user, no fixed UID")
	require.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, sc.SeccompProfile.Type)
	for _, c := range pod.Spec.Containers {
		require.Equal(t, "mirror.example/pause:3.10", c.Image)
		require.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
		require.Equal(t, []corev1.Capability{"ALL"}, c.SecurityContext.Capabilities.Drop)
		require.Nil(t, c.SecurityContext.Privileged)
		require.False(t, c.Resources.Requests.Cpu().IsZero())
		require.False(t, c.Resources.Limits.Memory().IsZero())
	}
	for _, v := range pod.Spec.Volumes {
		require.Nil(t, v.HostPath, "restricted forbids hostPath")
	}
}
