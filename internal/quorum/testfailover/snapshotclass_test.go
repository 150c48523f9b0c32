package testfailover

import (
	"testing"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestPickSnapshotClass: the class the snapshot-controller would use, or why
// there is none.
func TestPickSnapshotClass(t *testing.T) {
	class := func(name, driver string, isDefault bool) snapshotv1.VolumeSnapshotClass {
		c := snapshotv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Driver: driver}
		if isDefault {
			c.Annotations = map[string]string{defaultSnapshotClassAnnotation: "true"}
		}
		return c
	}
	for _, tc := range []struct {
		name    string
		classes []snapshotv1.VolumeSnapshotClass
		driver  string
		want    *string
		err     error
	}{
		{"the driver's default", []snapshotv1.VolumeSnapshotClass{class("a", "d", false), class("b", "d", true), class("c", "x", true)}, "d", ptr.To("b"), nil},
		{"the driver's only class", []snapshotv1.VolumeSnapshotClass{class("a", "d", false), class("c", "x", true)}, "d", ptr.To("a"), nil},
		{"none of the driver", []snapshotv1.VolumeSnapshotClass{class("c", "x", true)}, "d", nil, errNoClass},
		{"several, no default", []snapshotv1.VolumeSnapshotClass{class("a", "d", false), class("b", "d", false)}, "d", nil, errNoDefault},
		{"several defaults", []snapshotv1.VolumeSnapshotClass{class("a", "d", true), class("b", "d", true)}, "d", nil, errManyDefaults},
		{"unknown driver, some class", []snapshotv1.VolumeSnapshotClass{class("c", "x", true)}, "", nil, nil},
		{"unknown driver, no class", nil, "", nil, errUnknownDriver},
	} {
		got, err := pickSnapshotClass(tc.classes, tc.driver)
		require.ErrorIs(t, err, tc.err, tc.name)
		if tc.err == nil {
			require.NoError(t, err, tc.name)
		}
		require.Equal(t, tc.want, got, tc.name)
	}
}
