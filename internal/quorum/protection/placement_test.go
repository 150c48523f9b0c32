package protection

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// TestHolderPodIsPlacedByTheScheduler checks that no holder pod names its
// node (a pod with a nodeName bypasses the scheduler, so its
// WaitForFirstConsumer claims are never provisioned, and capacity, taints and
// topology are not checked): the primary's requires the VM's node, the DR's
// spreads a group's replicas over nodes and zones.
func TestHolderPodIsPlacedByTheScheduler(t *testing.T) {
	r := &Reconciler{}
	req := &srv1alpha1.ProtectionRequest{}
	req.Name, req.Namespace = "vm-a", "dr-production"
	req.Spec.VirtualMachine.Namespace, req.Spec.VirtualMachine.Name = "apps", "vm-a"
	req.Spec.ProtectionGroupRef.Name = "db"
	req.Status.Volumes = []srv1alpha1.ProtectedVolume{{Disk: "root", Volume: 0, SourcePVC: "root-pvc", TargetPVC: "root-dr"}}
	s := &scope{req: req}

	primary := r.holderPod(s, side{primary: true}, "worker-3")
	require.Empty(t, primary.Spec.NodeName)
	terms := primary.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	require.Equal(t, []corev1.NodeSelectorRequirement{{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{"worker-3"}}},
		terms[0].MatchFields, "the primary replica sits under the running VM")

	dr := r.holderPod(s, side{}, "")
	require.Empty(t, dr.Spec.NodeName)
	require.Nil(t, dr.Spec.Affinity)
	require.Len(t, dr.Spec.TopologySpreadConstraints, 2)
	for _, c := range dr.Spec.TopologySpreadConstraints {
		require.Equal(t, corev1.ScheduleAnyway, c.WhenUnsatisfiable, "a spread preference, so fewer nodes still take every replica")
		for k, v := range c.LabelSelector.MatchLabels {
			require.Equal(t, v, dr.Labels[k], "the constraint counts the group's holder pods, this one included")
		}
		require.Equal(t, "db", c.LabelSelector.MatchLabels[srv1alpha1.ProtectionGroupLabel])
	}
	require.Equal(t, corev1.LabelHostname, dr.Spec.TopologySpreadConstraints[0].TopologyKey)
	require.Equal(t, corev1.LabelTopologyZone, dr.Spec.TopologySpreadConstraints[1].TopologyKey)
}
