package protection_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/protection"
	"github.com/siterecovery/siterecovery/test/env"
)

// TestProtectVMWithDataVolumeTemplates protects a VM whose root disk is a
// DataVolume of its dataVolumeTemplates. The test clusters refuse, as
// KubeVirt does, a VM with a template no volume references: the switch onto
// the DRBD frontend PVCs must drop the template for the VM to be accepted and
// run again, and removing protection must put it back.
func TestProtectVMWithDataVolumeTemplates(t *testing.T) {
	log.SetLogger(zap.New(zap.WriteTo(t.Output())))
	z := newZone(t)
	ctx := t.Context()
	q, p, d := z.Client(env.Quorum), z.Client(env.Primary), z.Client(env.DR)

	makePVC(t, p, "tpl-root", "standard", corev1.PersistentVolumeBlock)
	makePVC(t, p, "tpl-data", "standard", corev1.PersistentVolumeBlock)
	templates := []kubevirtv1.DataVolumeTemplateSpec{{ObjectMeta: metav1.ObjectMeta{Name: "tpl-root",
		Annotations: map[string]string{"example.com/image": "fedora-42"}}}}
	vm := &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: "tpl"},
		Spec: kubevirtv1.VirtualMachineSpec{
			RunStrategy:         ptr.To(kubevirtv1.RunStrategyAlways),
			DataVolumeTemplates: templates,
			Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "tpl"}},
				Spec: kubevirtv1.VirtualMachineInstanceSpec{
					Domain:  kubevirtv1.DomainSpec{Devices: kubevirtv1.Devices{Disks: []kubevirtv1.Disk{{Name: "bootdisk"}, {Name: "datadisk"}}}},
					Volumes: []kubevirtv1.Volume{dvVolume("bootdisk", "tpl-root"), pvcVolume("datadisk", "tpl-data"), cloudInitVolume()},
				},
			},
		},
	}
	require.NoError(t, p.Create(ctx, vm))
	original := vm.Spec.DeepCopy()
	env.Eventually(t, wait, "tpl running", vmRunning(t, p, "tpl"))

	require.NoError(t, q.Create(ctx, newRequest("protect-tpl", "tpl")))
	// Before the fix every patch of the switch was refused and the VM stayed
	// Halted on its original disks, the request in SwitchingFrontend.
	env.Eventually(t, wait, "protect-tpl Protected", phaseIs(ctx, q, "protect-tpl", srv1alpha1.ProtectionProtected, protection.ReasonProtected))
	assert.Equal(t, map[string]string{"bootdisk": "pvc:tpl-root-drbd", "datadisk": "pvc:tpl-data-drbd"}, claims(getVM(t, p, "tpl")))
	env.Eventually(t, wait, "tpl running on DRBD", vmRunning(t, p, "tpl"))
	protected := getVM(t, p, "tpl")
	assert.Empty(t, protected.Spec.DataVolumeTemplates, "the template of the replaced DataVolume goes")
	assert.Contains(t, protected.Annotations, protection.OriginalDataVolumeTemplatesAnnotation)
	env.Eventually(t, wait, "tpl standby on DR without templates", func() error {
		standby := &kubevirtv1.VirtualMachine{}
		if err := d.Get(ctx, client.ObjectKeyFromObject(vm), standby); err != nil {
			return err
		}
		if len(standby.Spec.DataVolumeTemplates) != 0 {
			return fmt.Errorf("standby has dataVolumeTemplates %v", standby.Spec.DataVolumeTemplates)
		}
		return nil
	})

	require.NoError(t, q.Delete(ctx, getRequest(t, q, "protect-tpl")))
	env.Eventually(t, wait, "protect-tpl gone", gone(q, "protect-tpl"))
	env.Eventually(t, wait, "tpl running on its own disks", vmRunning(t, p, "tpl"))
	restored := getVM(t, p, "tpl")
	assert.True(t, equality.Semantic.DeepEqual(original.DataVolumeTemplates, restored.Spec.DataVolumeTemplates),
		"templates back: %v", restored.Spec.DataVolumeTemplates)
	assert.True(t, equality.Semantic.DeepEqual(original.Template.Spec.Volumes, restored.Spec.Template.Spec.Volumes),
		"volumes back: %v", restored.Spec.Template.Spec.Volumes)
	assert.NotContains(t, restored.Annotations, protection.OriginalDataVolumeTemplatesAnnotation)
	assert.NotContains(t, restored.Annotations, protection.OriginalVolumesAnnotation)
	assert.Equal(t, kubevirtv1.RunStrategyAlways, *restored.Spec.RunStrategy)
	nothingLeft(t, z, "protect-tpl")
}
