package snapshot

import (
	"time"

	groupsnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/siterecovery/siterecovery/test/sim/blockstore"
)

// DefaultDriver is the CSI driver name the simulator puts on what it creates.
const DefaultDriver = "sim.snapshot.siterecovery.io"

// Options tune the simulator.
type Options struct {
	// ReadyDelay is how long a dynamic snapshot takes to become readyToUse.
	ReadyDelay time.Duration
	// Driver is the CSI driver name; DefaultDriver when empty.
	Driver string
	// GuestAgent makes running VMIs report AgentConnected=True.
	GuestAgent bool
	// GuestAgentDelay is how long after the VMI runs the agent connects.
	GuestAgentDelay time.Duration
	// GuestAgentSelector limits the VMIs whose agent connects; nil means all.
	GuestAgentSelector labels.Selector
	// Clock measures the delays; nil means the real clock.
	Clock clock.PassiveClock
	// Data, when set, keeps the data: a snapshot copies its PVC's volume (named
	// by the PV name), a restored claim copies the snapshot, and a group snapshot
	// copies all its members at one point in time.
	Data *blockstore.Store
}

// SetupWithManager registers the simulator's controllers with mgr, whose scheme
// must hold the core, snapshot.storage.k8s.io/v1, groupsnapshot.storage.k8s.io/v1 and (for the guest agent)
// kubevirt.io/v1 types. Several managers in one process may each run one.
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
	if err := ctrl.NewControllerManagedBy(mgr).Named("snapshot-simulator").WithOptions(skip).
		For(&snapshotv1.VolumeSnapshot{}).
		Complete(&snapshots{client: c, reader: reader, opts: opts}); err != nil {
		return err
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("restore-simulator").WithOptions(skip).
		For(&corev1.PersistentVolumeClaim{}).
		Complete(&restores{client: c, reader: reader, data: opts.Data}); err != nil {
		return err
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("group-snapshot-simulator").WithOptions(skip).
		For(&groupsnapshotv1.VolumeGroupSnapshot{}).
		Complete(&groups{client: c, reader: reader, opts: opts}); err != nil {
		return err
	}
	if !opts.GuestAgent {
		return nil
	}
	return ctrl.NewControllerManagedBy(mgr).Named("guest-agent-simulator").WithOptions(skip).
		For(&kubevirtv1.VirtualMachineInstance{}).
		Complete(&agents{client: c, opts: opts})
}
