package main

import (
	"context"
	"fmt"
	"time"

	replicationv1alpha1 "github.com/csi-addons/kubernetes-csi-addons/api/replication.storage/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	wsetup "github.com/siterecovery/siterecovery/internal/workload/setup"
	"github.com/siterecovery/siterecovery/test/sim/storagearray"
)

// Names of the Offloaded zone (-offloaded): a third DR namespace whose
// storage array replicates one global group by itself, in cycles.
const (
	ofNamespace        = "dr-offloaded"
	ofZoneName         = "demo-offloaded"
	ofPolicy           = "offloaded-1m"
	ofAppNS            = "offloaded-apps"
	ofGroup            = "of-group"
	ofClass            = "array-block"
	ofReplicationClass = "array-vgrc"
	ofProvisioner      = "array.csi.example.com"
	ofGroupID          = "sandbox-array-group"
	// ofCycle is how often the simulated array ends a replication cycle.
	ofCycle = 5 * time.Second
	// ofObjective is the group's RPO objective: four cycles, so that a
	// healthy link never passes it and a link down for a while does.
	ofObjective = 20
)

// offloadedSims is the Offloaded zone's simulated array: one replication
// link between the two sites.
type offloadedSims struct {
	link *storagearray.Sync
}

// offloadedZone is the Offloaded zone's DR namespace; each workload cluster
// gets the application namespace, the operator namespace of the global
// VolumeGroupReplications, and the array's StorageClass and global
// VolumeGroupReplicationClass (one storage ID per site, one group ID).
func offloadedZone() drNamespaceSpec {
	return drNamespaceSpec{
		namespace: ofNamespace, zone: ofZoneName,
		displayName: "Sandbox (Offloaded)", description: "the same two sites, replicated by a storage array",
		backend: srv1alpha1.BackendOffloaded, storageClass: ofClass, policy: ofPolicy, interval: "1m",
		workload: func(cluster string) []client.Object {
			storageID := "array-" + cluster
			return []client.Object{ns(ofAppNS), ns(wsetup.DefaultOperatorNamespace),
				&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: ofClass, Labels: map[string]string{
					drv1alpha1.OffloadedLabel: "true", drv1alpha1.StorageIDLabel: storageID}}, Provisioner: ofProvisioner},
				&replicationv1alpha1.VolumeGroupReplicationClass{
					ObjectMeta: metav1.ObjectMeta{Name: ofReplicationClass, Labels: map[string]string{
						drv1alpha1.StorageIDLabel: storageID, drv1alpha1.GroupReplicationIDLabel: ofGroupID, drv1alpha1.GlobalLabel: "true"}},
					Spec: replicationv1alpha1.VolumeGroupReplicationClassSpec{Provisioner: ofProvisioner,
						Parameters: map[string]string{"schedulingInterval": "1m"}}}}
		},
	}
}

// setupOffloadedSims registers the storage array simulator of a workload
// cluster; both clusters' simulators share the one link.
func (sb *sandbox) setupOffloadedSims(mgr ctrl.Manager) error {
	return storagearray.SetupWithManager(mgr, storagearray.Options{Name: "storagearray-offloaded", Delay: 500 * time.Millisecond,
		Conditions: true, Classes: []string{ofReplicationClass}, Sync: sb.of.link})
}

func ofPVCName() string { return ofGroup + "-disk" }
func ofVMName() string  { return ofGroup + "-vm" }

// protectOffloaded creates the Offloaded group's VM running on the primary
// and halted on the DR cluster, its disk on both (the array's replica on the
// DR cluster), and protects it with a ProtectionGroup and a DRPC; it waits
// until the group is Deployed and its lag is tracked.
func (sb *sandbox) protectOffloaded(ctx context.Context) error {
	for _, cluster := range []string{primary, dr} {
		c := sb.zone.Clusters[cluster].Client
		run := kubevirtv1.RunStrategyHalted
		if cluster == primary {
			run = kubevirtv1.RunStrategyAlways
		}
		for _, obj := range []client.Object{ofPVC(), ofVM(run)} {
			if err := c.Create(ctx, obj); err != nil {
				return fmt.Errorf("creating %T %s on %s: %w", obj, obj.GetName(), cluster, err)
			}
		}
	}
	q := sb.zone.Clusters["quorum"].Client
	if err := q.Create(ctx, &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ofNamespace, Name: ofGroup},
		Spec: srv1alpha1.ProtectionGroupSpec{
			VirtualMachines: []srv1alpha1.VirtualMachineReference{{Namespace: ofAppNS, Name: ofVMName()}},
			ActiveCluster:   primary, ZoneRef: &srv1alpha1.LocalObjectReference{Name: ofZoneName},
			Replication: srv1alpha1.ReplicationSettings{RPOObjectiveSeconds: ofObjective}}}); err != nil {
		return err
	}
	if err := q.Create(ctx, &drv1alpha1.DRPlacementControl{
		ObjectMeta: metav1.ObjectMeta{Namespace: ofNamespace, Name: ofGroup},
		Spec: drv1alpha1.DRPlacementControlSpec{
			ProtectionGroupRef: srv1alpha1.LocalObjectReference{Name: ofGroup},
			DRPolicyRef:        srv1alpha1.LocalObjectReference{Name: ofPolicy},
			PVCSelector:        metav1.LabelSelector{MatchLabels: map[string]string{"app": ofGroup}},
			PreferredCluster:   primary,
		}}); err != nil {
		return err
	}
	say("%s: DRPC %s/%s created (storage array, a cycle every %s, objective %ds); waiting for protection", ofGroup, ofNamespace, ofGroup, ofCycle, ofObjective)
	if err := sb.waitDRPCPhase(ctx, ofNamespace, ofGroup, drv1alpha1.DRStateDeployed, primary); err != nil {
		return err
	}
	return sb.ofWaitHealth(ctx, srv1alpha1.HealthHealthy)
}

func ofPVC() *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ofAppNS, Name: ofPVCName(), Labels: map[string]string{"app": ofGroup}},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(ofClass),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}

func ofVM(s kubevirtv1.VirtualMachineRunStrategy) *kubevirtv1.VirtualMachine {
	disk := kubevirtv1.Volume{Name: "data", VolumeSource: kubevirtv1.VolumeSource{
		PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: ofPVCName()}}}}
	return &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: ofAppNS, Name: ofVMName(), Labels: map[string]string{"app": ofGroup}},
		Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(s), Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
			Spec: kubevirtv1.VirtualMachineInstanceSpec{Volumes: []kubevirtv1.Volume{disk}}}},
	}
}

// offloadedHelp is what printHelp says about the Offloaded zone.
func (sb *sandbox) offloadedHelp() string {
	return fmt.Sprintf(`The Offloaded zone (DR namespace %[1]s; the array ends a cycle every %[4]s):
  kubectl -n %[1]s get drpc,replicationgroupstatuses,rpoevents
  kubectl --kubeconfig %[2]s -n %[3]s get volumegroupreplications
  kubectl --kubeconfig %[2]s -n %[5]s get volumereplicationgroups
`, ofNamespace, sb.kubeconfig(primary), wsetup.DefaultOperatorNamespace, ofCycle, ofAppNS)
}
