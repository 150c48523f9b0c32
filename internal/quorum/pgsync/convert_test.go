package pgsync

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

func dvVolume(name, dv string, hotplug bool) kubevirtv1.Volume {
	return kubevirtv1.Volume{Name: name, VolumeSource: kubevirtv1.VolumeSource{DataVolume: &kubevirtv1.DataVolumeSource{Name: dv, Hotpluggable: hotplug}}}
}

func pvcVolume(name, claim string, hotplug bool) kubevirtv1.Volume {
	v := kubevirtv1.Volume{Name: name, VolumeSource: kubevirtv1.VolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{Hotpluggable: hotplug}}}
	v.PersistentVolumeClaim.ClaimName = claim
	return v
}

func cloudInit(name string) kubevirtv1.Volume {
	return kubevirtv1.Volume{Name: name, VolumeSource: kubevirtv1.VolumeSource{CloudInitNoCloud: &kubevirtv1.CloudInitNoCloudSource{UserData: "#cloud-config"}}}
}

func dvTemplate(name string) kubevirtv1.DataVolumeTemplateSpec {
	return kubevirtv1.DataVolumeTemplateSpec{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func specWith(volumes []kubevirtv1.Volume, templates ...kubevirtv1.DataVolumeTemplateSpec) kubevirtv1.VirtualMachineSpec {
	return kubevirtv1.VirtualMachineSpec{
		Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}},
			Spec: kubevirtv1.VirtualMachineInstanceSpec{
				Domain: kubevirtv1.DomainSpec{Resources: kubevirtv1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}},
				Volumes: volumes,
			},
		},
		DataVolumeTemplates: templates,
	}
}

func TestStandbySpec(t *testing.T) {
	always := kubevirtv1.RunStrategyAlways
	for _, tc := range []struct {
		name string
		src  kubevirtv1.VirtualMachineSpec
		want kubevirtv1.VirtualMachineSpec
	}{{
		name: "DataVolume volume becomes PVC, its template is dropped",
		src:  specWith([]kubevirtv1.Volume{dvVolume("root", "db-root", false)}, dvTemplate("db-root")),
		want: specWith([]kubevirtv1.Volume{pvcVolume("root", "db-root", false)}),
	}, {
		name: "PVC and other volumes are kept as they are",
		src:  specWith([]kubevirtv1.Volume{pvcVolume("root", "web-root", false), cloudInit("init")}),
		want: specWith([]kubevirtv1.Volume{pvcVolume("root", "web-root", false), cloudInit("init")}),
	}, {
		name: "hotpluggable DataVolume stays hotpluggable",
		src:  specWith([]kubevirtv1.Volume{pvcVolume("root", "r", false), dvVolume("data", "d", true)}, dvTemplate("d")),
		want: specWith([]kubevirtv1.Volume{pvcVolume("root", "r", false), pvcVolume("data", "d", true)}),
	}, {
		name: "orphaned templates are dropped too",
		src:  specWith([]kubevirtv1.Volume{pvcVolume("root", "r", false)}, dvTemplate("old"), dvTemplate("older")),
		want: specWith([]kubevirtv1.Volume{pvcVolume("root", "r", false)}),
	}, {
		name: "run fields are not carried over; instancetype loses its revision",
		src: func() kubevirtv1.VirtualMachineSpec {
			s := specWith(nil)
			s.RunStrategy = &always
			s.Running = ptr.To(true)
			s.Instancetype = &kubevirtv1.InstancetypeMatcher{Name: "u1.medium", RevisionName: "rev-primary"}
			s.Preference = &kubevirtv1.PreferenceMatcher{Name: "fedora", RevisionName: "rev-primary"}
			return s
		}(),
		want: func() kubevirtv1.VirtualMachineSpec {
			s := specWith(nil)
			s.Instancetype = &kubevirtv1.InstancetypeMatcher{Name: "u1.medium"}
			s.Preference = &kubevirtv1.PreferenceMatcher{Name: "fedora"}
			return s
		}(),
	}, {
		name: "no template",
		src:  kubevirtv1.VirtualMachineSpec{DataVolumeTemplates: []kubevirtv1.DataVolumeTemplateSpec{dvTemplate("x")}},
		want: kubevirtv1.VirtualMachineSpec{},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.src.DeepCopy()
			got := standbySpec(&tc.src)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, before, &tc.src, "the source spec must not change")
		})
	}
}

func TestNewStandbyIsHaltedAndLabelled(t *testing.T) {
	src := &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "db", Labels: map[string]string{"app": "db"},
			Annotations: map[string]string{"kubevirt.io/latest-observed-api-version": "v1"}},
		Spec:   specWith([]kubevirtv1.Volume{dvVolume("root", "db-root", false)}, dvTemplate("db-root")),
		Status: kubevirtv1.VirtualMachineStatus{PrintableStatus: kubevirtv1.VirtualMachineStatusRunning, Ready: true},
	}
	src.Spec.RunStrategy = ptr.To(kubevirtv1.RunStrategyAlways)
	labels := map[string]string{"siterecovery.trilio.io/zone": "z"}
	vm := newStandby(src, labels)
	require.Equal(t, kubevirtv1.RunStrategyHalted, *vm.Spec.RunStrategy)
	require.Nil(t, vm.Spec.Running)
	require.Empty(t, vm.Spec.DataVolumeTemplates)
	require.Equal(t, "db-root", vm.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName)
	require.Equal(t, map[string]string{"app": "db", "siterecovery.trilio.io/zone": "z", CreatedByLabel: ControllerName}, vm.Labels)
	require.Empty(t, vm.Annotations)
	require.Empty(t, vm.Status)
	require.True(t, standbyInSync(vm, standbySpec(&src.Spec), labels))
}

func TestSetStandbySpecKeepsRunFieldsAndAnnotations(t *testing.T) {
	labels := map[string]string{"siterecovery.trilio.io/zone": "z"}
	standby := &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{
		Annotations: map[string]string{"siterecovery.trilio.io/previous-run-strategy": "Always"}}}
	standby.Spec = specWith([]kubevirtv1.Volume{pvcVolume("root", "r", false)})
	standby.Spec.RunStrategy = ptr.To(kubevirtv1.RunStrategyManual)
	standby.Spec.Instancetype = &kubevirtv1.InstancetypeMatcher{Name: "u1.medium", RevisionName: "rev-dr"}

	src := specWith([]kubevirtv1.Volume{pvcVolume("root", "r", false)})
	src.Template.Spec.Domain.Resources.Requests[corev1.ResourceMemory] = resource.MustParse("2Gi")
	src.Instancetype = &kubevirtv1.InstancetypeMatcher{Name: "u1.medium", RevisionName: "rev-primary"}
	want := standbySpec(&src)
	require.False(t, standbyInSync(standby, want, labels))

	setStandbySpec(standby, want, labels)
	require.True(t, standbyInSync(standby, want, labels))
	require.Equal(t, kubevirtv1.RunStrategyManual, *standby.Spec.RunStrategy)
	require.Equal(t, "Always", standby.Annotations["siterecovery.trilio.io/previous-run-strategy"])
	require.Equal(t, "rev-dr", standby.Spec.Instancetype.RevisionName, "the standby's own revision is kept")
	require.Equal(t, "2Gi", ptr.To(standby.Spec.Template.Spec.Domain.Resources.Requests[corev1.ResourceMemory]).String())
}

func TestVMActive(t *testing.T) {
	for status, want := range map[kubevirtv1.VirtualMachinePrintableStatus]bool{
		kubevirtv1.VirtualMachineStatusStopped:  false,
		kubevirtv1.VirtualMachineStatusRunning:  true,
		kubevirtv1.VirtualMachineStatusStarting: true,
		kubevirtv1.VirtualMachineStatusStopping: true,
		"":                                      false,
	} {
		vm := &kubevirtv1.VirtualMachine{Status: kubevirtv1.VirtualMachineStatus{PrintableStatus: status}}
		assert.Equal(t, want, vmActive(vm), string(status))
	}
	assert.True(t, vmActive(&kubevirtv1.VirtualMachine{Status: kubevirtv1.VirtualMachineStatus{Created: true}}))
}

func TestHalted(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec kubevirtv1.VirtualMachineSpec
		want bool
	}{
		{"no run fields", kubevirtv1.VirtualMachineSpec{}, true},
		{"Halted", kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(kubevirtv1.RunStrategyHalted)}, true},
		{"Always", kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(kubevirtv1.RunStrategyAlways)}, false},
		{"Manual", kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(kubevirtv1.RunStrategyManual)}, false},
		{"running false", kubevirtv1.VirtualMachineSpec{Running: ptr.To(false)}, true},
		{"running true", kubevirtv1.VirtualMachineSpec{Running: ptr.To(true)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, halted(&kubevirtv1.VirtualMachine{Spec: tc.spec}))
		})
	}
}
