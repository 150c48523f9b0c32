// Package setup wires quorum-manager: it registers every quorum-tier controller
// and the remote-cluster connections they share with one manager. It is the only
// package that imports the quorum controllers together; cmd/quorum-manager, the
// tests and the sandbox run the tier through it. A new quorum controller lives in
// its own package under internal/quorum and is added to AddToManager here.
package setup

import (
	"errors"
	"time"

	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/siterecovery/siterecovery/internal/boot"
	"github.com/siterecovery/siterecovery/internal/quorum/admission"
	"github.com/siterecovery/siterecovery/internal/quorum/compliance"
	"github.com/siterecovery/siterecovery/internal/quorum/drill"
	"github.com/siterecovery/siterecovery/internal/quorum/drpc"
	"github.com/siterecovery/siterecovery/internal/quorum/drpolicy"
	"github.com/siterecovery/siterecovery/internal/quorum/failover"
	"github.com/siterecovery/siterecovery/internal/quorum/monitor"
	"github.com/siterecovery/siterecovery/internal/quorum/pgsync"
	"github.com/siterecovery/siterecovery/internal/quorum/protection"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
	"github.com/siterecovery/siterecovery/internal/quorum/testfailover"
	"github.com/siterecovery/siterecovery/internal/quorum/zone"
)

// RBAC on the quorum cluster, in the DR namespace: leader election holds a Lease
// and records events about it. Each controller package declares its own rights;
// make generate collects them into config/rbac/quorum-manager and the
// quorum-control-plane chart's Role.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update
// +kubebuilder:rbac:groups=core,resources=events,verbs=create;patch

// Options are the flags every siterecovery binary accepts.
type Options = boot.Options

// DefaultHolderImage is the image of the replica holder pods unless a flag says
// otherwise.
const DefaultHolderImage = protection.DefaultHolderImage

// DefaultProbeImage is the image of the test failover's probe Jobs unless a
// flag says otherwise.
const DefaultProbeImage = testfailover.DefaultProbeImage

// DefaultFailureThreshold is how many probes of a workload cluster must fail in
// a row before it is unreachable unless a flag says otherwise.
const DefaultFailureThreshold = remote.DefaultFailureThreshold

// DefaultRPOComplianceWindow is the span of the RPO compliance metric unless
// a flag says otherwise.
const DefaultRPOComplianceWindow = compliance.DefaultWindow

// QuorumOptions are quorum-manager's own settings.
type QuorumOptions struct {
	// ProbeInterval is how often every workload cluster's API server is probed.
	ProbeInterval time.Duration
	// FailureThreshold is how many probes in a row must fail before a cluster
	// is unreachable; DefaultFailureThreshold if zero.
	FailureThreshold int
	// HolderImage is the image of the replica holder pods the protection flow
	// creates on the workload clusters.
	HolderImage string
	// ProbeImage is the image of the test failover's probe Jobs;
	// DefaultProbeImage if empty.
	ProbeImage string
	// ClaimRecheckInterval is how often a Protected request re-checks its
	// DRBD claims; protection.ClaimRecheckInterval if zero.
	ClaimRecheckInterval time.Duration
	// ProtectableNamespaces are the application namespaces whose VMs this DR
	// namespace may protect and test (the quorum chart's
	// protection.allowedNamespaces). nil checks nothing (tests running
	// quorum-manager in-process); empty allows none, as the binary's
	// --protection-allowed-namespaces does when it lists none.
	ProtectableNamespaces []string
	// Clock is what the failover controller's timeouts and Lease, the
	// prober's timestamps and the drill schedules read the time from; the
	// real clock if nil. Tests jump it.
	Clock clock.PassiveClock
	// RPOComplianceWindow is the span, ending now, of the exported RPO
	// compliance ratio; compliance.DefaultWindow (7 days) if zero.
	RPOComplianceWindow time.Duration
}

// Quorum is the shared state of quorum-manager's reconcilers.
type Quorum struct {
	Remote remote.Connector
}

// Run runs quorum-manager until SIGTERM or SIGINT and returns its exit code.
func Run(o Options, q QuorumOptions) int { return boot.Run(o, QuorumManager(q)) }

// QuorumManager returns the Register function of quorum-manager. The DR namespace
// is mandatory: one quorum-manager serves exactly one dr-<name> namespace.
func QuorumManager(q QuorumOptions) boot.Register {
	return func(mgr ctrl.Manager, o boot.Options) error {
		if o.Namespace == "" {
			return errors.New("--namespace is required: quorum-manager serves one DR namespace (dr-<name>)")
		}
		quorum, err := AddToManager(mgr, q)
		if err != nil {
			return err
		}
		if err := compliance.SetupWithManager(mgr, o.Namespace, q.RPOComplianceWindow, q.Clock); err != nil {
			return err
		}
		return ServeWebhooks(mgr, quorum, o.Webhook)
	}
}

// ServeWebhooks serves quorum-manager's admission webhooks when o has a port.
func ServeWebhooks(mgr ctrl.Manager, q *Quorum, o boot.WebhookOptions) error {
	return boot.ServeWebhooks(mgr, o, func(mgr ctrl.Manager) error { return admission.SetupWithManager(mgr, q.Remote) })
}

// AddToManager registers every quorum-tier component with mgr. Tests and the
// sandbox call it directly to run quorum-manager in-process.
func AddToManager(mgr ctrl.Manager, q QuorumOptions) (*Quorum, error) {
	rm := remote.NewManager(mgr.GetScheme(), ctrl.Log.WithName("remote"), remote.Options{FailureThreshold: q.FailureThreshold, Clock: q.Clock})
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
	if err := failover.SetupWithManager(mgr, rm, failover.Options{Clock: q.Clock}); err != nil {
		return nil, err
	}
	if err := monitor.SetupWithManager(mgr, rm); err != nil {
		return nil, err
	}
	if err := testfailover.SetupWithManager(mgr, rm, testfailover.Options{ProbeImage: q.ProbeImage, AllowedNamespaces: q.ProtectableNamespaces}); err != nil {
		return nil, err
	}
	if err := drill.SetupWithManager(mgr, drill.Options{Clock: q.Clock}); err != nil {
		return nil, err
	}
	if err := protection.SetupWithManager(mgr, rm, protection.Options{HolderImage: q.HolderImage, ClaimRecheckInterval: q.ClaimRecheckInterval, AllowedNamespaces: q.ProtectableNamespaces}); err != nil {
		return nil, err
	}
	return &Quorum{Remote: rm}, nil
}
