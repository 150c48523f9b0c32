package protection

import (
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/harness"
)

// TestHolderPodPassesRestricted: the replica holder, as the protection flow
// builds it for each side, is admitted by the API server's PodSecurity plugin
// in an application namespace that enforces "restricted" (the checks are
// k8s.io/pod-security-admission's policy/check_*.go at level restricted).
func TestHolderPodPassesRestricted(t *testing.T) {
	z := harness.Start(t, harness.Options{CRDDirectoryPaths: []string{}}, "workload")
	c := z.Clusters["workload"].Client
	ctx := t.Context()
	ns := harness.RestrictedNamespace(t, c, "apps")

	r := &Reconciler{}
	req := &srv1alpha1.ProtectionRequest{}
	req.Name = "vm-a"
	req.Spec.VirtualMachine.Namespace, req.Spec.VirtualMachine.Name = ns.Name, "vm-a"
	req.Spec.ZoneRef.Name = "production"
	req.Status.Volumes = []srv1alpha1.ProtectedVolume{{Disk: "root", Volume: 0, SourcePVC: "root-pvc", TargetPVC: "root-pvc-dr", MetaPVC: "root-meta"}}
	for _, sd := range (&scope{req: req}).sides() {
		pod := r.holderPod(&scope{req: req}, sd, "node-1")
		require.Equal(t, DefaultHolderImage, pod.Spec.Containers[0].Image)
		require.NoError(t, c.Create(ctx, pod, client.DryRunAll), "holder pod (primary %t) in a restricted namespace", sd.primary)
	}
}
