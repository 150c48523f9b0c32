// Package setup wires pg-controller: the workload-tier ProtectionGroup,
// VolumeReplicationGroup and VolSync group (ReplicationGroupSource and
// ReplicationGroupDestination) reconcilers and the collector of orphaned DRBD
// claims, which act only on their own cluster. A new
// workload controller lives in its own package under internal/workload and is
// added to PGController here; nothing of the quorum tier may be imported.
package setup

import (
	volsyncv1alpha1 "github.com/backube/volsync/api/v1alpha1"
	replicationv1alpha1 "github.com/csi-addons/kubernetes-csi-addons/api/replication.storage/v1alpha1"
	groupsnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/siterecovery/siterecovery/internal/boot"
	"github.com/siterecovery/siterecovery/internal/workload/admission"
	"github.com/siterecovery/siterecovery/internal/workload/claimgc"
	"github.com/siterecovery/siterecovery/internal/workload/protectiongroup"
	"github.com/siterecovery/siterecovery/internal/workload/volsync/rgd"
	"github.com/siterecovery/siterecovery/internal/workload/volsync/rgs"
	"github.com/siterecovery/siterecovery/internal/workload/vrg"
)

// RBAC on the workload cluster: leader election holds a Lease in the release
// namespace (a Role there; siterecovery-system is the chart's usual namespace,
// the chart binds the rules in its own) and records events about it. Each
// controller package declares its own rights; make generate collects them into
// config/rbac/pg-controller and the workload-control-plane chart.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=siterecovery-system
// +kubebuilder:rbac:groups=core,resources=events,verbs=create;patch

// Options are the flags every siterecovery binary accepts.
type Options = boot.Options

// DefaultOperatorNamespace is where the shared global VolumeGroupReplications
// live unless a flag says otherwise.
const DefaultOperatorNamespace = vrg.DefaultOperatorNamespace

// DefaultAdmissionGroups may change what pg-controller's webhooks guard unless
// a flag says otherwise: Kubernetes' own controllers and the nodes.
var DefaultAdmissionGroups = admission.DefaultGroups

// DefaultProbeImage is the image of the boot plans' gate probes unless a
// flag says otherwise.
const DefaultProbeImage = protectiongroup.DefaultProbeImage

// DefaultQuorumServiceAccount is quorum-manager's ServiceAccount in each DR
// namespace, which the admission webhooks scope to that DR namespace.
const DefaultQuorumServiceAccount = admission.DefaultQuorumServiceAccount

// PGOptions are pg-controller's own settings.
type PGOptions struct {
	// OperatorNamespace is where the shared global VolumeGroupReplications live.
	OperatorNamespace string
	// Allowed are the identities the admission webhooks let start standby VMs
	// and change the replication stack's objects.
	Allowed admission.Identities
	// ProbeImage runs the boot plans' gate probes; DefaultProbeImage if
	// empty.
	ProbeImage string
	// VolSyncServiceExport exports each VolSync destination's Service with an
	// MCS ServiceExport and has the peer send to its clusterset name.
	VolSyncServiceExport bool
}

// Run runs pg-controller until SIGTERM or SIGINT and returns its exit code.
func Run(o Options, p PGOptions) int {
	o.CacheByObject = CacheByObject()
	return boot.Run(o, PGController(p))
}

// PGController returns the Register function of pg-controller.
func PGController(p PGOptions) boot.Register {
	return func(mgr ctrl.Manager, o boot.Options) error {
		if err := protectiongroup.SetupWithOptions(mgr, protectiongroup.Options{ProbeImage: p.ProbeImage}); err != nil {
			return err
		}
		if err := claimgc.SetupWithManager(mgr, claimgc.Options{}); err != nil {
			return err
		}
		log := mgr.GetLogger().WithName("setup")
		missing, err := unserved(mgr, &volsyncv1alpha1.ReplicationSource{}, &volsyncv1alpha1.ReplicationDestination{},
			&groupsnapshotv1.VolumeGroupSnapshot{})
		if err != nil {
			return err
		}
		if len(missing) == 0 {
			if err := rgs.SetupWithManager(mgr); err != nil {
				return err
			}
			if err := rgd.SetupWithManager(mgr, rgd.Options{ServiceExport: p.VolSyncServiceExport}); err != nil {
				return err
			}
		} else {
			log.Info("VolSync replication is off: this cluster does not serve its kinds; restart pg-controller after installing VolSync and the volume group snapshot CRDs", "missing", missing)
		}
		if missing, err = unserved(mgr, &replicationv1alpha1.VolumeGroupReplication{}); err != nil {
			return err
		}
		if len(missing) == 0 {
			if err := vrg.SetupWithManager(mgr, vrg.Options{OperatorNamespace: p.OperatorNamespace}); err != nil {
				return err
			}
		} else {
			log.Info("VolumeReplicationGroups are off: this cluster does not serve csi-addons' volume group replication; restart pg-controller after installing it", "missing", missing)
		}
		return ServeWebhooks(mgr, p, o.Webhook)
	}
}

// ServeWebhooks serves pg-controller's admission webhooks when o has a port.
func ServeWebhooks(mgr ctrl.Manager, p PGOptions, o boot.WebhookOptions) error {
	return boot.ServeWebhooks(mgr, o, func(mgr ctrl.Manager) error {
		admission.SetupWithManager(mgr, p.Allowed)
		return nil
	})
}
