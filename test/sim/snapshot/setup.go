package snapshot

import (
	"path/filepath"
	"time"

	groupsnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/siterecovery/siterecovery/test/sim/blockstore"
)

// DefaultDriver is the CSI driver name the simulator serves when
// Options.Driver is empty.
const DefaultDriver = "sim.snapshot.siterecovery.io"

// Options tune the simulator.
type Options struct {
	// ReadyDelay is how long the driver takes to cut a snapshot, counted from
	// the creation of the content the snapshot-controller made for it (whose
	// creationTimestamp has whole seconds: the cut comes 0 to 1 s sooner).
	ReadyDelay time.Duration
	// Hold, when set, holds every VolumeSnapshotContent's cut while it
	// returns true: a test makes a cut wait for an event of its own rather
	// than for a delay.
	Hold func() bool
	// Driver is the CSI driver whose contents the simulator serves (the
	// driver of the VolumeSnapshotClasses); DefaultDriver when empty.
	Driver string
	// GuestAgent makes running VMIs report AgentConnected=True.
	GuestAgent bool
	// GuestAgentDelay is how long after the VMI runs the agent connects.
	GuestAgentDelay time.Duration
	// GuestAgentSelector limits the VMIs whose agent connects; nil means all.
	GuestAgentSelector labels.Selector
	// Clock measures the delays; nil means the real clock.
	Clock clock.PassiveClock
	// Data, when set, keeps the data: a snapshot copies its volume's blocks
	// (keyed by PV name), a restored claim copies the snapshot's, and a group
	// snapshot copies all its volumes at one point in time.
	Data *blockstore.Store
	// DeviceDir, when set, is the folder of the volumes' bytes, one file per
	// PV named after it (test/sim/storage's Options.DeviceDir): a group
	// snapshot also copies each member's file to ImageFile(DeviceDir, its
	// snapshot handle) at the cut, so that a test reads what the point holds.
	DeviceDir string
}

// ImageFile is the copy of a volume's bytes that snapshot handle holds.
func ImageFile(dir, handle string) string { return filepath.Join(dir, "snapshot-"+handle) }

// SetupWithManager registers the simulator's controllers with mgr, whose scheme
// must hold the core, snapshot.storage.k8s.io/v1, groupsnapshot.storage.k8s.io/v1
// and (for the guest agent) kubevirt.io/v1 types. Several managers in one
// process may each run one. The cluster must run the snapshot-controller
// (harness Cluster.StartSnapshotController): the simulator does only what a
// CSI driver and its sidecars do.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Driver == "" {
		opts.Driver = DefaultDriver
	}
	skip := controller.Options{SkipNameValidation: ptr.To(true)}
	c := mgr.GetClient()
	reader := mgr.GetAPIReader()
	ours := predicate.NewPredicateFuncs(func(o client.Object) bool {
		switch o := o.(type) {
		case *snapshotv1.VolumeSnapshotContent:
			return o.Spec.Driver == opts.Driver
		case *groupsnapshotv1.VolumeGroupSnapshotContent:
			return o.Spec.Driver == opts.Driver
		}
		return false
	})
	if err := ctrl.NewControllerManagedBy(mgr).Named("snapshot-driver-simulator").WithOptions(skip).
		For(&snapshotv1.VolumeSnapshotContent{}, builder.WithPredicates(ours)).
		Complete(&contents{client: c, reader: reader, opts: opts}); err != nil {
		return err
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("group-snapshot-driver-simulator").WithOptions(skip).
		For(&groupsnapshotv1.VolumeGroupSnapshotContent{}, builder.WithPredicates(ours)).
		Complete(&groups{client: c, reader: reader, opts: opts}); err != nil {
		return err
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("restore-simulator").WithOptions(skip).
		For(&corev1.PersistentVolumeClaim{}).
		Complete(&restores{client: c, reader: reader, data: opts.Data, driver: opts.Driver}); err != nil {
		return err
	}
	if !opts.GuestAgent {
		return nil
	}
	return ctrl.NewControllerManagedBy(mgr).Named("guest-agent-simulator").WithOptions(skip).
		For(&kubevirtv1.VirtualMachineInstance{}).
		Complete(&agents{client: c, opts: opts})
}
