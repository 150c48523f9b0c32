package vmdisks

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

func TestReferencedTemplates(t *testing.T) {
	tmpl := func(name string) kubevirtv1.DataVolumeTemplateSpec {
		return kubevirtv1.DataVolumeTemplateSpec{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	dv := kubevirtv1.Volume{Name: "root", VolumeSource: kubevirtv1.VolumeSource{DataVolume: &kubevirtv1.DataVolumeSource{Name: "db-root"}}}
	in := []kubevirtv1.DataVolumeTemplateSpec{tmpl("db-data"), tmpl("db-root"), tmpl("db-logs")}
	// db-data is named by a PVC volume only, which KubeVirt accepts but which
	// would have KubeVirt create a DataVolume no disk uses.
	got := ReferencedTemplates(in, vm(dv, pvcVolume("data", "db-data", false)).Spec.Template)
	require.Equal(t, []kubevirtv1.DataVolumeTemplateSpec{tmpl("db-root")}, got)

	got[0].Name = "changed"
	require.Equal(t, "db-root", in[1].Name, "the result is a copy")
	require.Empty(t, ReferencedTemplates(in, nil), "no template, no references")
}
