package drpc

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// Reasons of this controller's conditions that the specs do not name.
const (
	ReasonPolicyNotFound = "DRPolicyNotFound"
	// ReasonProgressing is the apis reason for a step that waits on a cluster.
	ReasonProgressing = drv1alpha1.ReasonProgressing
)

// load reads the DRPC's policy, group and zone and checks that they fit.
func (r *Reconciler) load(ctx context.Context, s *scope) (ctrl.Result, error) {
	d := s.drpc
	s.policy = &drv1alpha1.DRPolicy{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: d.Spec.DRPolicyRef.Name}, s.policy); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, flow.Stalled(ReasonPolicyNotFound, "DRPolicy %s/%s not found", d.Namespace, d.Spec.DRPolicyRef.Name)
		}
		return ctrl.Result{}, err
	}
	s.clusters = s.policy.Spec.DRClusters
	if len(s.clusters) != 2 {
		return ctrl.Result{}, flow.Stalled(srv1alpha1.ReasonInvalidSpec, "DRPolicy %s must name two drClusters", s.policy.Name)
	}
	s.group = &srv1alpha1.ProtectionGroup{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: d.Spec.ProtectionGroupRef.Name}, s.group); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, flow.Stalled(srv1alpha1.ReasonGroupNotFound, "ProtectionGroup %s/%s not found", d.Namespace, d.Spec.ProtectionGroupRef.Name)
		}
		return ctrl.Result{}, err
	}
	if s.group.Spec.ZoneRef == nil {
		return ctrl.Result{}, flow.Stalled(srv1alpha1.ReasonInvalidSpec, "ProtectionGroup %s has no zoneRef", s.group.Name)
	}
	s.zone = s.group.Spec.ZoneRef.Name
	z := &srv1alpha1.ProtectionZone{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: s.zone}, z); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, flow.Stalled(srv1alpha1.ReasonInvalidSpec, "ProtectionZone %s/%s not found", d.Namespace, s.zone)
		}
		return ctrl.Result{}, err
	}
	s.backend = z.Spec.StorageBackend
	ns, err := vmNamespace(s.group)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.vrgNamespace = ns
	return ctrl.Result{}, nil
}

// validate checks that the DRPC places the application on clusters of its policy.
func (r *Reconciler) validate(_ context.Context, s *scope) (ctrl.Result, error) {
	if s.target() == "" {
		return ctrl.Result{}, flow.Stalled(srv1alpha1.ReasonInvalidSpec, "no cluster to place %s on: set preferredCluster", s.group.Name)
	}
	for _, c := range []string{s.current(), s.target()} {
		if c == "" {
			continue
		}
		if !slices.Contains(s.clusters, c) {
			return ctrl.Result{}, flow.Stalled(srv1alpha1.ReasonInvalidSpec, "cluster %q is not one of DRPolicy %s's drClusters %v", c, s.policy.Name, s.clusters)
		}
	}
	return ctrl.Result{}, nil
}

// vmNamespace is the namespace every VM of the group lives in on the workload
// clusters: the VRG's namespace, since a VRG selects PVCs in its own namespace.
func vmNamespace(g *srv1alpha1.ProtectionGroup) (string, error) {
	ns := ""
	for _, vm := range g.Spec.VirtualMachines {
		switch {
		case ns == "":
			ns = vm.Namespace
		case vm.Namespace != ns:
			return "", flow.Stalled(srv1alpha1.ReasonInvalidSpec, "the VMs of ProtectionGroup %s span namespaces %s and %s; one VolumeReplicationGroup covers one namespace", g.Name, ns, vm.Namespace)
		}
	}
	if ns == "" {
		return "", flow.Stalled(srv1alpha1.ReasonInvalidSpec, "ProtectionGroup %s has no VMs, so no namespace for its VolumeReplicationGroups", g.Name)
	}
	return ns, nil
}

// connect reads the VRG and the workload group copy on every reachable
// cluster. An unreachable cluster is remembered, not an error: a Failover
// proceeds without its source.
func (r *Reconciler) connect(ctx context.Context, s *scope) (ctrl.Result, error) {
	s.remotes, s.unreachable = map[string]*remote.Remote{}, map[string]error{}
	s.vrgs, s.copies = map[string]*drv1alpha1.VolumeReplicationGroup{}, map[string]*srv1alpha1.ProtectionGroup{}
	for _, c := range s.clusters {
		rc, err := remote.Answering(r.Remote, s.key(c))
		if err != nil {
			if r.Remote.Health(s.key(c)).Reachable() {
				// Connected and reachable: the cache is filling.
				s.syncing = true
			}
			s.unreachable[c] = err
			continue
		}
		vrg := &drv1alpha1.VolumeReplicationGroup{}
		switch err := rc.Cached.Get(ctx, client.ObjectKey{Namespace: s.vrgNamespace, Name: s.drpc.Name}, vrg); {
		case apierrors.IsNotFound(err):
			vrg = nil
		case err != nil:
			s.unreachable[c] = err
			continue
		}
		cp := &srv1alpha1.ProtectionGroup{}
		switch err := rc.Cached.Get(ctx, client.ObjectKey{Namespace: s.drpc.Namespace, Name: s.group.Name}, cp); {
		case apierrors.IsNotFound(err):
			cp = nil
		case err != nil:
			s.unreachable[c] = err
			continue
		}
		s.remotes[c], s.vrgs[c], s.copies[c] = rc, vrg, cp
	}
	return ctrl.Result{}, nil
}

// adoptGlobalLabel copies the global-vgr label from the primary VRG onto the
// DRPC; the VRGs written afterwards carry it. A label is never
// removed here: the VRG that set it may simply be unreachable.
func (r *Reconciler) adoptGlobalLabel(ctx context.Context, s *scope) (ctrl.Result, error) {
	vrg := s.vrgs[s.current()]
	if s.current() == "" || vrg == nil || vrg.Spec.ReplicationState != drv1alpha1.Primary {
		return ctrl.Result{}, nil
	}
	label := vrg.Labels[drv1alpha1.GlobalVGRLabel]
	if label == "" || label == s.globalVGR() {
		return ctrl.Result{}, nil
	}
	before := s.drpc.DeepCopy()
	if s.drpc.Labels == nil {
		s.drpc.Labels = map[string]string{}
	}
	s.drpc.Labels[drv1alpha1.GlobalVGRLabel] = label
	if err := r.Client.Patch(ctx, s.drpc, client.MergeFrom(before)); err != nil {
		return ctrl.Result{}, flow.Transient(srv1alpha1.ReasonWriteFailed, fmt.Errorf("labelling DRPC with %s=%s: %w", drv1alpha1.GlobalVGRLabel, label, err))
	}
	s.before.Labels, s.before.ResourceVersion = s.drpc.Labels, s.drpc.ResourceVersion
	s.events = append(s.events, flow.Event{Type: corev1.EventTypeNormal, Reason: "GlobalVGRLabelled",
		Message: fmt.Sprintf("joined global replication group %s from the primary VRG on %s", label, s.current())})
	return ctrl.Result{}, nil
}
