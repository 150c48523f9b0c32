package nodeagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/drbd"
)

// deviceRetry is how long to wait for a missing backing device to appear.
const deviceRetry = 15 * time.Second

func (r *Reconciler) ensureFinalizer(ctx context.Context, s *scope) (ctrl.Result, error) {
	if controllerutil.AddFinalizer(s.obj, Finalizer) {
		if err := r.Client.Update(ctx, s.obj); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding finalizer: %w", err)
		}
	}
	return ctrl.Result{}, nil
}

func (r *Reconciler) claimName(_ context.Context, s *scope) (ctrl.Result, error) {
	if owner, ok := r.owners.claim(s.obj.Name, s.key); !ok {
		return ctrl.Result{}, stalledOn(srv1alpha1.ConditionConfigured, ReasonNameConflict, nil,
			fmt.Sprintf("DRBD resource %q is already driven on node %s by DRBDResource %s; DRBDResource names must be unique per node across namespaces",
				s.obj.Name, r.Config.NodeName, owner))
	}
	return ctrl.Result{}, nil
}

// configure resolves the backing devices, validates and renders the resource file.
func (r *Reconciler) configure(ctx context.Context, s *scope) (ctrl.Result, error) {
	if len(s.obj.Spec.Peers) == 0 {
		return ctrl.Result{}, waitOn(srv1alpha1.ConditionConfigured, ReasonWaitingForPeers, 0, nil,
			fmt.Sprintf("spec.peers is empty; the local replica serves on %s:%d once the peers are known",
				r.Config.ReplicationAddress, s.obj.Spec.Port))
	}
	if p := r.Config.ReplicationNetworks.refusedPeer(&s.obj.Spec); p != nil {
		return ctrl.Result{}, stalledOn(srv1alpha1.ConditionConfigured, ReasonPeerAddressRefused, nil,
			fmt.Sprintf("peer %s address %s is outside the replication networks %s; the agent does not connect to it. If it is a replication address of yours, add its network to the workload chart value drbdNodeAgent.replicationNetworks (flag --replication-networks)",
				p.NodeName, p.Address, r.Config.ReplicationNetworks.String()))
	}
	// TLS is checked before anything is resolved or written: a node that
	// cannot encrypt holds the replica (tls.go).
	tls, err := r.replicationTLS(ctx, s.obj)
	if err != nil {
		return ctrl.Result{}, err
	}
	// Devices are looked up again only when the volumes change: a role change,
	// the step a failover waits on, then costs no API read. The claims of
	// resolved devices are checked again on their own schedule
	// (claimcheck.go).
	var res ctrl.Result
	if vk := volumesKey(s.obj.Spec.Volumes); s.memo.devices == nil || s.memo.volumes != vk {
		devices, meta, err := r.resolveDevices(ctx, s.obj)
		if err != nil {
			return ctrl.Result{}, err
		}
		s.memo.devices, s.memo.metaDevices, s.memo.volumes = devices, meta, vk
		s.memo.claimsCheckedAt, s.memo.untrusted = r.Clock.Now(), ""
	} else {
		next, err := r.recheckClaims(ctx, s)
		if err != nil {
			return ctrl.Result{}, err
		}
		if s.memo.untrusted != "" {
			return r.holdUntrusted(s, next)
		}
		res.RequeueAfter = next
	}
	s.devices = s.memo.devices
	rc := resourceConfig(s.obj, r.Config.ReplicationAddress, s.devices, s.memo.metaDevices)
	auth, err := r.PeerSecrets.peerAuth(ctx, s.obj)
	if err != nil {
		return ctrl.Result{}, err
	}
	rc.PeerAuth = auth
	rc.TLS = tls
	data, err := rc.Render()
	if err != nil {
		return ctrl.Result{}, stalledOn(srv1alpha1.ConditionConfigured, srv1alpha1.ReasonInvalidSpec, err,
			fmt.Sprintf("the spec cannot be turned into a DRBD resource file; fix the spec: %v", unwrapAll(err)))
	}
	if _, err := drbd.ReplaceDerivedFile(r.Config.ResourceDir, resFile(s.obj.Name), data); err != nil {
		return ctrl.Result{}, fmt.Errorf("writing %s: %w", filepath.Join(r.Config.ResourceDir, resFile(s.obj.Name)), err)
	}
	// Adjust whenever the file differs from the one last applied by this agent:
	// after a change, after a failed adjust, and once after a restart (the kernel
	// may have drifted while the agent was away).
	s.rendered = string(data)
	s.needsAdjust = s.memo.applied != s.rendered
	return res, nil
}

// volumesKey identifies the volumes of a spec, to notice when they change.
// Their JSON, not %+v, which prints the claim references' addresses and so
// differed on every read.
func volumesKey(vols []srv1alpha1.DRBDVolume) string {
	data, err := json.Marshal(vols)
	if err != nil {
		return fmt.Sprintf("%#v", err) // never equal to a key: resolved again
	}
	return string(data)
}

// resolveDevices resolves each volume's backing device and, where the volume
// keeps its metadata on a PVC of its own, that PVC's device. Every device comes
// from a claim backingClaim accepts; the spec never names a device.
func (r *Reconciler) resolveDevices(ctx context.Context, obj *srv1alpha1.DRBDResource) (devices, meta map[int32]string, err error) {
	devices, meta = make(map[int32]string, len(obj.Spec.Volumes)), map[int32]string{}
	for _, v := range obj.Spec.Volumes {
		if v.BackingPVC == nil {
			return nil, nil, stalledOn(srv1alpha1.ConditionConfigured, srv1alpha1.ReasonInvalidSpec, nil,
				fmt.Sprintf("%s: set backingPVC", volumeName(v.Number)))
		}
		if devices[v.Number], err = r.resolvePVC(ctx, obj, v.Number, v.BackingPVC, "backing"); err != nil {
			return nil, nil, err
		}
		if v.MetaPVC != nil {
			if meta[v.Number], err = r.resolvePVC(ctx, obj, v.Number, v.MetaPVC, "metadata"); err != nil {
				return nil, nil, err
			}
		}
	}
	return devices, meta, nil
}

// resolvePVC is the device of the PVC ref names for volume n of obj; what says
// which of the volume's PVCs it is in messages.
func (r *Reconciler) resolvePVC(ctx context.Context, obj *srv1alpha1.DRBDResource, n int32, ref *srv1alpha1.LocalObjectReference, what string) (string, error) {
	pvc, err := r.backingClaim(ctx, obj, ref)
	p := ""
	if err == nil {
		p, err = r.Devices.DevicePath(ctx, pvc)
	}
	var refused *refusal
	switch {
	case errors.As(err, &refused):
		// Retried slowly: labelling a claim wakes no reconcile of the agent,
		// which does not watch PVCs.
		return "", waitOn(srv1alpha1.ConditionConfigured, ReasonBackingDeviceRefused, deviceRetry, nil,
			fmt.Sprintf("%s: %s PVC refused, no device was touched: %s", volumeName(n), what, refused.msg))
	case errors.Is(err, ErrDeviceMissing):
		return "", waitOn(srv1alpha1.ConditionConfigured, srv1alpha1.ReasonBackingDeviceMissing, deviceRetry, err,
			fmt.Sprintf("%s: %s PVC: %v", volumeName(n), what, err))
	case err != nil:
		return "", fmt.Errorf("%s: resolving %s PVC: %w", volumeName(n), what, err)
	}
	return p, nil
}

// createMetadata runs "drbdadm create-md" once in the life of the resource on this
// node. status.metadataCreated and the marker file both remember it; either one is
// enough to never run it again (it would wipe the replica).
func (r *Reconciler) createMetadata(ctx context.Context, s *scope) (ctrl.Result, error) {
	dir, marker := r.Config.ResourceDir, markerFile(s.obj.Name)
	hasMarker, err := fileExists(dir, marker)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !s.obj.Status.MetadataCreated && !hasMarker && !s.up {
		if wait, blocked := s.memo.adm.blocked(r.Clock.Now(), "create-md"); blocked {
			return ctrl.Result{}, r.admError(s, wait)
		}
		if err := r.Adm.CreateMD(ctx, s.obj.Name, 0); err != nil {
			msg := "drbdadm create-md failed: " + drbdMessage(err)
			return ctrl.Result{}, r.admError(s, s.memo.adm.fail(r.Clock.Now(), "create-md", msg))
		}
		s.memo.adm.reset()
		r.event(s.obj, "Normal", "MetadataCreated", "drbdadm create-md initialised the DRBD metadata")
	}
	if !hasMarker {
		if _, err := drbd.WriteFileAtomic(dir, marker, []byte("drbdadm create-md done\n")); err != nil {
			return ctrl.Result{}, fmt.Errorf("writing metadata marker: %w", err)
		}
	}
	s.obj.Status.MetadataCreated = true
	return ctrl.Result{}, nil
}

// bringUp runs "up" when DRBD does not know the resource, "adjust" when the file
// changed (or was not applied since the agent started).
func (r *Reconciler) bringUp(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.untrusted {
		return ctrl.Result{}, nil // held as it runs (holdUntrusted)
	}
	cmd, run := "", func(context.Context, string) error { return nil }
	switch {
	case !s.up:
		cmd, run = "up", r.Adm.Up
	case s.needsAdjust:
		cmd, run = "adjust", r.Adm.Adjust
	}
	if cmd != "" {
		fp := fmt.Sprint(cmd, s.obj.Generation)
		if wait, blocked := s.memo.adm.blocked(r.Clock.Now(), fp); blocked {
			return ctrl.Result{}, r.admError(s, wait)
		}
		if err := run(ctx, s.obj.Name); err != nil {
			msg := fmt.Sprintf("drbdadm %s failed: %s", cmd, drbdMessage(err))
			return ctrl.Result{}, r.admError(s, s.memo.adm.fail(r.Clock.Now(), fp, msg))
		}
		s.memo.adm.reset()
		if cmd == "up" {
			s.memo.upIssued, s.up = r.Clock.Now(), true
		}
	}
	// "up" applies the file as much as "adjust" does.
	s.memo.applied = s.rendered
	setCondition(s, metav1.Condition{Type: srv1alpha1.ConditionConfigured, Status: metav1.ConditionTrue,
		Reason: srv1alpha1.ReasonApplied, Message: "resource file " + resFile(s.obj.Name) + " applied"})
	return ctrl.Result{}, nil
}

func (r *Reconciler) admError(s *scope, wait time.Duration) error {
	return waitOn(srv1alpha1.ConditionConfigured, srv1alpha1.ReasonAdmFailed, wait, nil, s.memo.adm.message)
}

// applyRole promotes or demotes. Promotion uses --force only with spec.forcePromotion.
func (r *Reconciler) applyRole(ctx context.Context, s *scope) (ctrl.Result, error) {
	s.roleRan = true
	want := wantedRole(s.obj)
	current := s.tracked.Role
	if current == "" {
		current = string(srv1alpha1.RoleSecondary) // just brought up: DRBD starts Secondary
	}
	if current == string(want) {
		s.memo.promotion.reset()
		setRoleApplied(s, current)
		return ctrl.Result{}, nil
	}
	if want == srv1alpha1.RoleSecondary {
		if err := r.Adm.Secondary(ctx, s.obj.Name); err != nil {
			return ctrl.Result{}, waitOn(srv1alpha1.ConditionRoleApplied, srv1alpha1.ReasonAdmFailed, retryBase, err,
				"drbdadm secondary failed: "+drbdMessage(err))
		}
		return r.roleProgressing(s, "demoted; waiting for DRBD to report Secondary")
	}
	fp := promotionFingerprint(s.up, s.tracked)
	if wait, blocked := s.memo.promotion.blocked(r.Clock.Now(), fp); blocked {
		return ctrl.Result{}, waitOn(srv1alpha1.ConditionRoleApplied, srv1alpha1.ReasonPromotionRefused, wait, nil, s.memo.promotion.message)
	}
	if err := r.Adm.Primary(ctx, s.obj.Name, s.obj.Spec.ForcePromotion); err != nil {
		msg := "DRBD refused the promotion: " + drbdMessage(err)
		wait := s.memo.promotion.fail(r.Clock.Now(), fp, msg)
		return ctrl.Result{}, waitOn(srv1alpha1.ConditionRoleApplied, srv1alpha1.ReasonPromotionRefused, wait, err, msg)
	}
	s.memo.promotion.reset()
	return r.roleProgressing(s, "promoted; waiting for DRBD to report Primary")
}

// roleProgressing: the command succeeded and events2 will show the new role and
// wake the reconciler, which then reports it with RoleApplied=True. Until then
// this reconcile writes no status (see Reconcile): an intermediate "in
// progress" status, or one with the new observedGeneration but the old role,
// would cost every role change of a failover one more write and one more
// watch event on every watcher, for a state that lasts as long as events2
// takes to report it.
func (r *Reconciler) roleProgressing(s *scope, msg string) (ctrl.Result, error) {
	s.log.V(1).Info(msg)
	s.roleCommanded = true
	return ctrl.Result{RequeueAfter: 5 * time.Second}, nil
}

// setRoleApplied records that DRBD runs the wanted role.
func setRoleApplied(s *scope, role string) {
	setCondition(s, metav1.Condition{Type: srv1alpha1.ConditionRoleApplied, Status: metav1.ConditionTrue,
		Reason: srv1alpha1.ReasonApplied, Message: "DRBD role is " + role})
}

// wantedRole is the role the spec asks for; none means Secondary.
func wantedRole(obj *srv1alpha1.DRBDResource) srv1alpha1.DRBDRole {
	if obj.Spec.Role == "" {
		return srv1alpha1.RoleSecondary
	}
	return obj.Spec.Role
}

// unwrapAll flattens a joined error (as drbd.ResourceConfig.Validate returns) into "a; b; c".
func unwrapAll(err error) string {
	var j interface{ Unwrap() []error }
	if !errors.As(err, &j) {
		return err.Error()
	}
	msgs := make([]string, 0, len(j.Unwrap()))
	for _, e := range j.Unwrap() {
		msgs = append(msgs, e.Error())
	}
	return strings.Join(msgs, "; ")
}
