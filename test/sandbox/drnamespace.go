package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/process"
)

// drNamespaceSpec is one more DR namespace over the same two workload
// clusters, run by a quorum-manager of its own: the VolSync zone (-volsync)
// and the Offloaded zone (-offloaded) differ only in these fields.
type drNamespaceSpec struct {
	namespace, zone          string
	displayName, description string
	backend                  srv1alpha1.StorageBackend
	// storageClass is mapped to itself on the other cluster.
	storageClass string
	// policy names the DRPolicy over both clusters, every interval.
	policy, interval string
	// workload are the objects each workload cluster needs besides the DR
	// namespace: the application namespace and the storage's classes.
	workload func(cluster string) []client.Object
}

// seedDRNamespace creates a DR namespace: on the quorum cluster the namespace,
// the workload clusters' kubeconfig Secrets, the ProtectionZone and the
// DRPolicy; on each workload cluster the namespace and spec.workload.
func (sb *sandbox) seedDRNamespace(ctx context.Context, spec drNamespaceSpec) error {
	objs := map[string][]client.Object{"quorum": {ns(spec.namespace)}}
	var clusters []srv1alpha1.ZoneCluster
	for _, cluster := range []string{primary, dr} {
		objs[cluster] = append([]client.Object{ns(spec.namespace)}, spec.workload(cluster)...)
		kc, err := sb.quorumKubeconfig(cluster)
		if err != nil {
			return err
		}
		objs["quorum"] = append(objs["quorum"], &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: spec.namespace, Name: cluster + "-kubeconfig"},
			Data:       map[string][]byte{srv1alpha1.KubeconfigSecretKey: kc},
		})
		role := srv1alpha1.ClusterRolePrimary
		if cluster == dr {
			role = srv1alpha1.ClusterRoleDR
		}
		clusters = append(clusters, srv1alpha1.ZoneCluster{Name: cluster, Role: role,
			KubeconfigSecretRef: srv1alpha1.SecretKeyReference{Name: cluster + "-kubeconfig"}, Client: srv1alpha1.ClientSettings{TimeoutSeconds: 3}})
	}
	objs["quorum"] = append(objs["quorum"],
		&srv1alpha1.ProtectionZone{
			ObjectMeta: metav1.ObjectMeta{Namespace: spec.namespace, Name: spec.zone},
			Spec: srv1alpha1.ProtectionZoneSpec{
				DisplayName: spec.displayName, Description: spec.description,
				StorageBackend:  spec.backend,
				Clusters:        clusters,
				StorageMappings: []srv1alpha1.StorageMapping{{SourceStorageClass: spec.storageClass, TargetStorageClass: spec.storageClass}},
			},
		},
		&drv1alpha1.DRPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: spec.namespace, Name: spec.policy},
			Spec: drv1alpha1.DRPolicySpec{DRClusters: []string{primary, dr}, SchedulingInterval: spec.interval}})
	for _, cluster := range []string{"quorum", primary, dr} {
		c := sb.zone.Clusters[cluster].Client
		for _, obj := range objs[cluster] {
			if err := c.Create(ctx, obj); err != nil {
				return fmt.Errorf("creating %T %s on %s: %w", obj, obj.GetName(), cluster, err)
			}
		}
	}
	return nil
}

// drNamespaceProcess is the quorum-manager of one more DR namespace.
func (sb *sandbox) drNamespaceProcess(name, namespace string, webhookArgs, common []string) *process.Process {
	return &process.Process{Name: name, Bin: filepath.Join(sb.o.binDir, "quorum-manager"), Kubeconfig: sb.kubeconfig("quorum"),
		Args: append(append([]string{"--namespace=" + namespace, "--cluster-probe-interval=2s", protectionArg(namespace)}, webhookArgs...), common...)}
}

// protectableNamespace is the one application namespace whose VMs each DR
// namespace of the sandbox protects: its quorum-manager's
// --protection-allowed-namespaces and its quorum chart's
// protection.allowedNamespaces.
func protectableNamespace(drNS string) string {
	return map[string]string{drNamespace: appNS, vsNamespace: vsAppNS, ofNamespace: ofAppNS}[drNS]
}

func protectionArg(drNS string) string {
	return "--protection-allowed-namespaces=" + protectableNamespace(drNS)
}

// getDRPC reads a DRPC on the quorum cluster.
func (sb *sandbox) getDRPC(ctx context.Context, namespace, name string) (*drv1alpha1.DRPlacementControl, error) {
	d := &drv1alpha1.DRPlacementControl{}
	return d, sb.zone.Clusters["quorum"].Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, d)
}

// patchDRPC changes a DRPC, as a user asking for an action does.
func (sb *sandbox) patchDRPC(ctx context.Context, namespace, name string, mutate func(*drv1alpha1.DRPlacementControl)) error {
	d, err := sb.getDRPC(ctx, namespace, name)
	if err != nil {
		return err
	}
	before := d.DeepCopy()
	mutate(d)
	return sb.zone.Clusters["quorum"].Client.Patch(ctx, d, client.MergeFrom(before))
}

// waitDRPCPhase waits until a DRPC reached phase on cluster and finished it.
func (sb *sandbox) waitDRPCPhase(ctx context.Context, namespace, name string, phase drv1alpha1.DRState, cluster string) error {
	var why string
	err := poll(ctx, 5*time.Minute, func() (bool, error) {
		d, err := sb.getDRPC(ctx, namespace, name)
		if err != nil {
			return false, err
		}
		st := d.Status
		why = fmt.Sprintf("phase %s progression %s on %q", st.Phase, st.Progression, st.PreferredDecision.ClusterName)
		return st.Phase == phase && st.PreferredDecision.ClusterName == cluster && st.ObservedGeneration == d.Generation &&
			(st.Progression == drv1alpha1.ProgressionCompleted || st.Progression == drv1alpha1.ProgressionCleaningUp), nil
	})
	if err != nil {
		return fmt.Errorf("%s %s on %s (%s): %w", name, phase, cluster, why, err)
	}
	return nil
}
