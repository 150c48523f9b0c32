package testfailover

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// defaultSnapshotClassAnnotation marks the VolumeSnapshotClass the CSI
// snapshot-controller uses for a snapshot that names none, one per driver.
const defaultSnapshotClassAnnotation = "snapshot.storage.kubernetes.io/is-default-class"

// snapshotClasses picks the VolumeSnapshotClass of every disk, as the CSI
// snapshot-controller would for a snapshot that names none: the class marked
// default among those of the disk's CSI driver, or the driver's only class.
// A disk with no class to use fails the test at once, saying what to create:
// without one the snapshot is never taken and the test would wait out its
// timeout. A disk whose driver cannot be told gets nil (the controller's
// default) as long as the cluster has any class at all.
func (r *Reconciler) snapshotClasses(ctx context.Context, s *scope, rc *remote.Remote, disks []disk) (map[string]*string, error) {
	out := map[string]*string{}
	if len(disks) == 0 {
		return out, nil // nothing left to request: no class is read
	}
	cluster := s.tf.Spec.TargetCluster
	list := &snapshotv1.VolumeSnapshotClassList{}
	if err := rc.Direct.List(ctx, list); err != nil {
		return nil, remoteErr(cluster, "listing VolumeSnapshotClasses", err)
	}
	for _, d := range disks {
		driver, from, err := csiDriver(ctx, rc, d.source)
		if err != nil {
			return nil, remoteErr(cluster, "finding the CSI driver of PVC "+d.source.Namespace+"/"+d.source.Name, err)
		}
		class, err := pickSnapshotClass(list.Items, driver)
		if err != nil {
			return nil, invalid(ReasonNoSnapshotClass, "cannot snapshot %s on %s: %s (%s); %s, then start the test again",
				d, cluster, err, from, fix(err, driver, cluster))
		}
		out[d.namespace+"/"+snapshotName(s.tf, d.vm, d.volume)] = class
	}
	return out, nil
}

// csiDriver is the CSI driver of a PVC, the one the snapshot-controller uses:
// its bound PersistentVolume's, else its StorageClass's provisioner; "" when
// neither can be read. from says where it was found, for the message.
func csiDriver(ctx context.Context, rc *remote.Remote, pvc *corev1.PersistentVolumeClaim) (driver, from string, err error) {
	if pvc.Spec.VolumeName != "" {
		pv := &corev1.PersistentVolume{}
		err := rc.Direct.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv)
		if err != nil && !apierrors.IsNotFound(err) {
			return "", "", err
		}
		if err == nil && pv.Spec.CSI != nil {
			return pv.Spec.CSI.Driver, "PersistentVolume " + pv.Name, nil
		}
	}
	name := ptr.Deref(pvc.Spec.StorageClassName, "")
	if name == "" {
		return "", "PVC " + pvc.Name + " has no CSI PersistentVolume or StorageClass", nil
	}
	sc := &storagev1.StorageClass{}
	if err := rc.Direct.Get(ctx, client.ObjectKey{Name: name}, sc); err != nil {
		if apierrors.IsNotFound(err) {
			return "", "StorageClass " + name + " of PVC " + pvc.Name + " not found", nil
		}
		return "", "", err
	}
	return sc.Provisioner, "StorageClass " + name, nil
}

// Why no class fits; fix turns each into the operator's next step.
var (
	errNoClass       = errors.New("no VolumeSnapshotClass")
	errNoDefault     = errors.New("several VolumeSnapshotClasses and none marked default")
	errManyDefaults  = errors.New("several VolumeSnapshotClasses marked default")
	errUnknownDriver = errors.New("no VolumeSnapshotClass on the cluster, and the CSI driver is unknown")
)

// pickSnapshotClass is the class for driver among classes: nil lets the
// snapshot-controller choose (driver unknown, some class exists).
func pickSnapshotClass(classes []snapshotv1.VolumeSnapshotClass, driver string) (*string, error) {
	if driver == "" {
		if len(classes) == 0 {
			return nil, errUnknownDriver
		}
		return nil, nil
	}
	var all, defaults []string
	for _, c := range classes {
		if c.Driver != driver {
			continue
		}
		all = append(all, c.Name)
		if c.Annotations[defaultSnapshotClassAnnotation] == "true" {
			defaults = append(defaults, c.Name)
		}
	}
	sort.Strings(all)
	sort.Strings(defaults)
	switch {
	case len(defaults) == 1:
		return &defaults[0], nil
	case len(defaults) > 1:
		return nil, fmt.Errorf("%w for driver %s: %s", errManyDefaults, driver, strings.Join(defaults, ", "))
	case len(all) == 1:
		return &all[0], nil
	case len(all) > 1:
		return nil, fmt.Errorf("%w for driver %s: %s", errNoDefault, driver, strings.Join(all, ", "))
	}
	return nil, fmt.Errorf("%w for CSI driver %s", errNoClass, driver)
}

// fix is the operator's next step for a pickSnapshotClass error.
func fix(err error, driver, cluster string) string {
	switch {
	case errors.Is(err, errManyDefaults), errors.Is(err, errNoDefault):
		return fmt.Sprintf("annotate exactly one VolumeSnapshotClass of driver %s on cluster %s with %s=\"true\"", driver, cluster, defaultSnapshotClassAnnotation)
	case errors.Is(err, errUnknownDriver):
		return fmt.Sprintf("create a VolumeSnapshotClass for the CSI driver of the DR backing PVCs on cluster %s", cluster)
	}
	return fmt.Sprintf("create a VolumeSnapshotClass with driver: %s on cluster %s", driver, cluster)
}
