package testfailover

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// Hook sidecars. A VM whose template carries HookSidecarsAnnotation runs a
// container of any image in its launcher pod. The workload chart's quorum
// guard refuses such a test copy unless the release sets
// quorumAccess.testFailover.allowHookSidecars, so without it the test fails
// at once (Pending, or Booting if the standby gained the annotation since)
// instead of late with the guard's refusal. The copy never drops the
// annotation: a drill that passes without the sidecar would vouch for a VM
// other than the one a failover boots.
const (
	// HookSidecarsAnnotation is KubeVirt's annotation on a VM template that
	// adds hook sidecar containers to its pod.
	HookSidecarsAnnotation = "hooks.kubevirt.io/hookSidecars"
	// SettingsConfigMap is the ConfigMap the workload chart renders in each
	// DR namespace with the quorumAccess choices a test failover reads.
	SettingsConfigMap = remote.AccessSettingsConfigMap
	// AllowHookSidecarsKey holds quorumAccess.testFailover.allowHookSidecars
	// in SettingsConfigMap, "true" or "false".
	AllowHookSidecarsKey = remote.AllowHookSidecarsKey
	// ReasonHookSidecar: a group VM has hook sidecars and the target
	// cluster's release does not let test failovers run them.
	ReasonHookSidecar = "HookSidecarNotAllowed"
)

// hookSidecarsAllowed reads whether the target cluster's workload release lets
// test copies keep hook sidecars; a cluster without the ConfigMap (no
// quorumAccess release, or an older one) does not.
func hookSidecarsAllowed(ctx context.Context, s *scope, rc *remote.Remote) (bool, error) {
	settings, err := remote.ReadAccessSettings(ctx, rc.Direct, s.tf.Namespace)
	if err != nil {
		return false, remoteErr(s.tf.Spec.TargetCluster, "reading the quorum access settings", err)
	}
	return settings.HookSidecarsAllowed(), nil
}

// checkHookSidecars fails the test when the standby's template has hook
// sidecars that the target cluster does not let test copies run.
func checkHookSidecars(ctx context.Context, s *scope, rc *remote.Remote, standby *kubevirtv1.VirtualMachine) error {
	if standby.Spec.Template == nil {
		return nil
	}
	if _, ok := standby.Spec.Template.ObjectMeta.Annotations[HookSidecarsAnnotation]; !ok {
		return nil
	}
	allowed, err := hookSidecarsAllowed(ctx, s, rc)
	if err != nil || allowed {
		return err
	}
	cluster := s.tf.Spec.TargetCluster
	return invalid(ReasonHookSidecar, "VM %s/%s has hook sidecars (template annotation %s): its test copy would run "+
		"their containers in the isolated namespace, which the workload chart's quorum guard on %s refuses, and a copy without them "+
		"would not test the VM a failover boots. Remove the annotation from the VM, or let test failovers run its hook sidecars: "+
		"set quorumAccess.testFailover.allowHookSidecars=true in the workload-control-plane release on %s",
		standby.Namespace, standby.Name, HookSidecarsAnnotation, cluster, cluster)
}

// checkGroupHookSidecars is checkHookSidecars for each group VM whose standby
// is on the target; a missing standby is the Snapshotting phase's to report.
func checkGroupHookSidecars(ctx context.Context, s *scope, rc *remote.Remote) error {
	for _, ref := range s.group.Spec.VirtualMachines {
		standby := &kubevirtv1.VirtualMachine{}
		switch err := rc.Direct.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, standby); {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return remoteErr(s.tf.Spec.TargetCluster, "reading standby VM "+ref.Namespace+"/"+ref.Name, err)
		}
		if err := checkHookSidecars(ctx, s, rc, standby); err != nil {
			return err
		}
	}
	return nil
}
