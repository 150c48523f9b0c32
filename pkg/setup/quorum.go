package setup

import (
	"errors"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/siterecovery/siterecovery/pkg/drpc"
	"github.com/siterecovery/siterecovery/pkg/drpolicy"
	"github.com/siterecovery/siterecovery/pkg/failover"
	"github.com/siterecovery/siterecovery/pkg/monitor"
	"github.com/siterecovery/siterecovery/pkg/pgsync"
	"github.com/siterecovery/siterecovery/pkg/protection"
	"github.com/siterecovery/siterecovery/pkg/remote"
	"github.com/siterecovery/siterecovery/pkg/testfailover"
	"github.com/siterecovery/siterecovery/pkg/zone"
)

// QuorumOptions are quorum-manager's own settings.
type QuorumOptions struct {
	// ProbeInterval is how often every workload cluster's API server is probed.
	ProbeInterval time.Duration
	// HolderImage is the image of the replica holder pods the protection flow
	// creates on the workload clusters.
	HolderImage string
}

// Quorum is the shared state of quorum-manager's reconcilers.
type Quorum struct {
	Remote *remote.Manager
}

// QuorumManager returns the Register function of quorum-manager. The DR namespace
// is mandatory: one quorum-manager serves exactly one dr-<name> namespace.
func QuorumManager(q QuorumOptions) Register {
	return func(mgr ctrl.Manager, o Options) error {
		if o.Namespace == "" {
			return errors.New("--namespace is required: quorum-manager serves one DR namespace (dr-<name>)")
		}
		_, err := SetupQuorum(mgr, q)
		return err
	}
}

// SetupQuorum registers every quorum-tier component with mgr. Tests and the
// sandbox call it directly to run quorum-manager in-process.
func SetupQuorum(mgr ctrl.Manager, q QuorumOptions) (*Quorum, error) {
	rm := remote.NewManager(mgr.GetScheme(), nil, ctrl.Log.WithName("remote"))
	if err := mgr.Add(rm); err != nil {
		return nil, err
	}
	if err := mgr.Add(&remote.Prober{Manager: rm, Interval: q.ProbeInterval}); err != nil {
		return nil, err
	}
	if err := zone.SetupWithManager(mgr, rm); err != nil {
		return nil, err
	}
	if err := pgsync.SetupWithManager(mgr, rm); err != nil {
		return nil, err
	}
	if err := drpolicy.SetupWithManager(mgr, rm); err != nil {
		return nil, err
	}
	if err := drpc.SetupWithManager(mgr, rm); err != nil {
		return nil, err
	}
	if err := failover.SetupWithManager(mgr, rm); err != nil {
		return nil, err
	}
	if err := monitor.SetupWithManager(mgr, rm); err != nil {
		return nil, err
	}
	if err := testfailover.SetupWithManager(mgr, rm); err != nil {
		return nil, err
	}
	if err := protection.SetupWithManager(mgr, rm, protection.Options{HolderImage: q.HolderImage}); err != nil {
		return nil, err
	}
	return &Quorum{Remote: rm}, nil
}
