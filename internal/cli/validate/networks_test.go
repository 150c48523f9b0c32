package validate

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/cli/clusters"
	"github.com/siterecovery/siterecovery/internal/scheme"
)

// A group whose VM uses a Multus network the DR cluster lacks and no mapping
// names is a problem; mapped to a network that exists it scores ok; a DR
// cluster validate cannot read is a warning.
func TestNetworkChecks(t *testing.T) {
	vm := &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "db"},
		Spec: kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{Spec: kubevirtv1.VirtualMachineInstanceSpec{
			Networks: []kubevirtv1.Network{{Name: "storage", NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: "storage"}}}}}}}}
	nad := &unstructured.Unstructured{}
	nad.SetAPIVersion("k8s.cni.cncf.io/v1")
	nad.SetKind("NetworkAttachmentDefinition")
	nad.SetNamespace("apps")
	nad.SetName("dr-storage")
	east := &clusters.Cluster{Name: "east", Client: fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(vm).Build()}
	west := &clusters.Cluster{Name: "west", Client: fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(client.Object(nad)).Build()}
	unreadable := &clusters.Cluster{Name: "west", Err: errors.New("Secret west-kubeconfig: forbidden")}
	mapped := []srv1alpha1.NetworkMapping{{SourceCluster: "east", TargetCluster: "west",
		Networks: []srv1alpha1.MultusNetworkMap{{Source: "storage", Target: "dr-storage"}}}}
	for _, tc := range []struct {
		name     string
		zoneMaps []srv1alpha1.NetworkMapping
		dr       *clusters.Cluster
		want     Score
		message  string
	}{
		{"missing and unmapped", nil, west, Problem,
			"VM apps/db network storage uses NetworkAttachmentDefinition apps/storage, which no networkMappings entry from east to west maps and cluster west does not have"},
		{"mapped by the zone", mapped, west, OK, "the 1 Multus networks the VMs need exist on the clusters they may move to"},
		{"DR cluster unreadable", nil, unreadable, Warning, "the VMs' networks were not checked on cluster west: Secret west-kubeconfig: forbidden"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z := &zoneCheck{r: &Report{}, conns: []*clusters.Cluster{east, tc.dr}, zone: &srv1alpha1.ProtectionZone{
				ObjectMeta: metav1.ObjectMeta{Name: "z"}, Spec: srv1alpha1.ProtectionZoneSpec{NetworkMappings: tc.zoneMaps}}}
			z.networks(context.Background(), &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "dr", Name: "shop"},
				Spec: srv1alpha1.ProtectionGroupSpec{ActiveCluster: "east", VirtualMachines: []srv1alpha1.VirtualMachineReference{{Namespace: "apps", Name: "db"}}}})
			if assert.Len(t, z.r.Results, 1) {
				r := z.r.Results[0]
				assert.Equal(t, "networks", r.Check)
				assert.Equal(t, "shop", r.Target)
				assert.Equal(t, tc.want, r.Score)
				assert.Equal(t, tc.message, r.Message)
			}
		})
	}
}
