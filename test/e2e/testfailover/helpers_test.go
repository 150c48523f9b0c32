package testfailover_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/setup"
	"github.com/siterecovery/siterecovery/internal/quorum/testfailover"
	"github.com/siterecovery/siterecovery/test/env"
	snapshotsim "github.com/siterecovery/siterecovery/test/sim/snapshot"
)

const (
	group   = "production-pg"
	timeout = 90 * time.Second
)

// zone is a protected group of VMs on a running three-cluster zone, with the
// snapshot simulator (and a guest agent) on the DR cluster.
type zone struct {
	*env.Env
	t    *testing.T
	root *testing.T
	ctx  context.Context
	vms  []string
	// procs are the zone's controllers, which a test kills and restarts.
	procs *env.Processes
	// holdCuts holds the snapshot simulator's cuts while set.
	holdCuts *atomic.Bool
}

// zoneOptions tune newZoneWith.
type zoneOptions struct {
	// workload tunes the workload tier of both clusters.
	workload env.WorkloadOptions
	// env are the zone's options.
	env env.Options
	// quorum are quorum-manager's options; a probe every second if zero.
	quorum setup.QuorumOptions
	// protocol is the replicas' DRBD protocol; env.DRBDReplica's (A) if empty.
	protocol srv1alpha1.ReplicationProtocol
	// protocols override protocol for the replicas of the VMs they name.
	protocols map[string]srv1alpha1.ReplicationProtocol
}

// newZoneWith builds the group as the protection flow leaves it, tuned by o:
// per VM a DRBD resource pair replicating primary -> DR, on the DR cluster a
// backing PVC "<vm>-disk" and a frontend PV/PVC "<vm>-disk-drbd" on
// /dev/drbd<minor>, and a Halted standby VM whose disk names the frontend PVC
// and which is attached to a multus network.
func newZoneWith(t *testing.T, vms int, o zoneOptions) *zone {
	if os.Getenv("TESTFAILOVER_LOG") != "" {
		ctrl.SetLogger(zap.New(zap.WriteTo(t.Output())))
	}
	if o.quorum.ProbeInterval == 0 {
		o.quorum.ProbeInterval = time.Second
	}
	w := o.workload
	z := &zone{Env: env.New(t, o.env), t: t, root: t, ctx: context.Background(), holdCuts: &atomic.Bool{}}
	z.procs = z.NewProcesses()
	for _, c := range []string{env.Primary, env.DR} {
		z.procs.StartWorkload(t, c, w)
		z.procs.StartAgent(t, c)
	}
	z.startSnapshotSimulator()
	// The backing PVCs' StorageClass and a default VolumeSnapshotClass for its
	// driver: a test failover snapshots with the class of the disk's driver.
	z.create(env.DR, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "standard"}, Provisioner: snapshotsim.DefaultDriver})
	z.create(env.DR, snapshotClass())
	go z.playJobController(t.Context())
	z.procs.StartQuorum(t, o.quorum)
	fabric := z.DRBD(t)
	require.NoError(t, fabric.SetSyncRate(1<<30))

	var refs []srv1alpha1.VirtualMachineReference
	for i := range vms {
		name := fmt.Sprintf("vm-%02d", i)
		z.vms = append(z.vms, name)
		refs = append(refs, srv1alpha1.VirtualMachineReference{Name: name, Namespace: env.AppNS})
		minor := int32(1000 + i)
		z.createBacking(name + "-disk")
		z.createFrontend(env.DR, name, minor)
		if z.ControlPlane() {
			// The production VM's launcher pod needs its claim: the
			// scheduler places no pod whose claim does not exist.
			z.createFrontend(env.Primary, name, minor)
		}
		z.create(env.Primary, vm(name, kubevirtv1.RunStrategyAlways))
		z.create(env.DR, vm(name, kubevirtv1.RunStrategyHalted))
		for _, side := range []struct {
			local, peer string
			nodeID      int32
		}{{env.Primary, env.DR, 0}, {env.DR, env.Primary, 1}} {
			res := env.DRBDReplica(group, name, side.local, side.peer, side.nodeID, int32(7000+i))
			if o.protocol != "" {
				res.Spec.Protocol = o.protocol
			}
			if p, ok := o.protocols[name]; ok {
				res.Spec.Protocol = p
			}
			z.CreateReplica(t, side.local, res)
		}
	}
	for _, name := range z.vms {
		z.waitDRBD(env.Primary, name, func(r *srv1alpha1.DRBDResource) bool { return r.Status.MetadataCreated && len(r.Status.Peers) == 1 })
		require.NoError(t, fabric.MarkUpToDate("vm-"+name, env.Nodes[env.Primary].Name))
		z.setPrimary(name)
	}
	for _, name := range z.vms {
		z.waitDRBD(env.Primary, name, func(r *srv1alpha1.DRBDResource) bool {
			return r.Status.Role == "Primary" && len(r.Status.Peers) == 1 && r.Status.Peers[0].Volumes[0].PeerDiskState == "UpToDate"
		})
		// A test failover snapshots only UpToDate DR replicas, as the DR
		// agent reports them.
		z.waitDRBD(env.DR, name, drUpToDate)
	}
	z.create(env.Primary, env.WorkloadGroup(group, refs, srv1alpha1.StateRunning))
	z.create(env.DR, env.WorkloadGroup(group, refs, srv1alpha1.StateStopped))
	z.create(env.Quorum, &srv1alpha1.ProtectionGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: group},
		Spec: srv1alpha1.ProtectionGroupSpec{VirtualMachines: refs, ActiveCluster: env.Primary,
			ZoneRef: &srv1alpha1.LocalObjectReference{Name: env.ZoneName}},
	})
	return z
}

// createFrontend creates a cluster's frontend PV/PVC "<vm>-disk-drbd" of a
// VM on /dev/drbd<minor> of the cluster's node, as the protection flow
// leaves it.
func (z *zone) createFrontend(cluster, name string, minor int32) {
	z.t.Helper()
	z.create(cluster, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "srdrbd-apps-" + name + "-disk", Labels: map[string]string{srv1alpha1.ObjectRoleLabel: "frontend"}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeMode: ptr.To(corev1.PersistentVolumeBlock),
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: fmt.Sprintf("/dev/drbd%d", minor)}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{env.Nodes[cluster].Name}}},
			}}}},
		},
	})
	z.create(cluster, pvc(name+"-disk-drbd", "frontend", ptr.To(""), "srdrbd-apps-"+name+"-disk"))
}

// createBacking creates a DR backing PVC bound to a volume of the snapshot
// simulator's CSI driver, as its StorageClass's provisioner and the PV
// controller would leave it: the snapshot-controller snapshots only a bound
// claim of a CSI volume. A bare API server runs neither, so the test writes
// the claim's status; on a control plane the PV binder binds it.
func (z *zone) createBacking(name string) {
	z.t.Helper()
	c := z.Client(env.DR)
	claim := pvc(name, "backing", ptr.To("standard"), "backing-"+name)
	volume := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "backing-" + name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    claim.Spec.Resources.Requests,
			AccessModes: claim.Spec.AccessModes, VolumeMode: claim.Spec.VolumeMode, StorageClassName: "standard",
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: env.AppNS, Name: name},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: snapshotsim.DefaultDriver, VolumeHandle: "backing-" + name}},
		},
	}
	if !z.ControlPlane() {
		z.create(env.DR, claim)
		volume.Spec.ClaimRef.UID = claim.UID
		z.create(env.DR, volume)
		claim.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, AccessModes: claim.Spec.AccessModes, Capacity: claim.Spec.Resources.Requests}
		require.NoError(z.t, c.Status().Update(z.ctx, claim))
		return
	}
	// The volume first, pre-bound by name: the binder binds a claim to its
	// volume when the claim is added, while a volume added after its claim
	// waits for the claim's periodic resync (--pvclaimbinder-sync-period, 15 s;
	// pkg/controller/volume/persistentvolume/pv_controller.go, syncVolume
	// and syncUnboundClaim). A status write here would race the binder's.
	z.create(env.DR, volume)
	z.create(env.DR, claim)
	env.Eventually(z.t, time.Minute, "backing claim "+name+" bound", func() error {
		if err := c.Get(z.ctx, client.ObjectKeyFromObject(claim), claim); err != nil {
			return err
		}
		if claim.Status.Phase != corev1.ClaimBound {
			return fmt.Errorf("phase %q", claim.Status.Phase)
		}
		return nil
	})
}

// startSnapshotSimulator runs the snapshot-controller, and the snapshot
// simulator (the CSI driver's part) and a guest agent for the test VMs (never
// for production), against the DR cluster.
func (z *zone) startSnapshotSimulator() {
	require.NoError(z.t, z.Clusters[env.DR].StartSnapshotController(z.ctx))
	mgr, err := ctrl.NewManager(z.Clusters[env.DR].Config, ctrl.Options{
		Scheme: z.Scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(z.t, err)
	isTest, err := labels.NewRequirement(testfailover.LabelUID, selection.Exists, nil)
	require.NoError(z.t, err)
	require.NoError(z.t, snapshotsim.SetupWithManager(mgr, snapshotsim.Options{
		ReadyDelay: 1500 * time.Millisecond, GuestAgent: true, GuestAgentDelay: 200 * time.Millisecond, Hold: z.holdCuts.Load,
		GuestAgentSelector: labels.NewSelector().Add(*isTest),
	}))
	ctx, cancel := context.WithCancel(z.ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	z.t.Cleanup(func() {
		cancel()
		require.NoError(z.t, <-done)
	})
}

// controlPlane are the options of a zone on whole control planes
// (env.Options.ControlPlane). The probe's verdict is each scenario's to give
// (probeVerdicts), so playJobController stays the job controller: kwok ends
// every Job's pod Succeeded at once (its pod-complete stage), which would
// pass every probe.
var controlPlane = env.Options{ControlPlane: true, ControllersOff: []string{"job-controller"}}

// Verdicts the stand-in job controller gives probe Jobs, by TestFailover name;
// a name not listed passes, noVerdict leaves the Job running.
var probeVerdicts = map[string]string{"probe-fails": "fail", "deleted-midway": "none", "boot-gate-times-out": "none"}

// playJobController plays the job controller, which a bare test API server
// lacks and a controlPlane zone runs without:
// it finishes every probe Job by writing the status a real one would.
func (z *zone) playJobController(ctx context.Context) {
	c := z.Client(env.DR)
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
		jobs := &batchv1.JobList{}
		if err := c.List(z.ctx, jobs, client.HasLabels{testfailover.LabelUID}); err != nil {
			continue
		}
		for i := range jobs.Items {
			job := &jobs.Items[i]
			verdict := probeVerdicts[job.Labels[testfailover.LabelName]]
			if len(job.Status.Conditions) > 0 || verdict == "none" || job.DeletionTimestamp != nil {
				continue
			}
			now := metav1.Now()
			before := job.DeepCopy()
			job.Status.StartTime = &now
			if verdict == "fail" {
				job.Status.Failed = 1
				job.Status.Conditions = []batchv1.JobCondition{
					{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: now, LastProbeTime: now},
					{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: now, LastProbeTime: now},
				}
			} else {
				job.Status.Succeeded = 1
				job.Status.CompletionTime = &now
				job.Status.Conditions = []batchv1.JobCondition{
					{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now, LastProbeTime: now},
					{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now, LastProbeTime: now},
				}
			}
			if err := c.Status().Patch(z.ctx, job, client.MergeFrom(before)); err != nil {
				z.t.Logf("job controller stand-in: %v", err)
			}
		}
	}
}

func pvc(name, role string, class *string, volume string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: name, Labels: map[string]string{srv1alpha1.ObjectRoleLabel: role}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeMode: ptr.To(corev1.PersistentVolumeBlock),
			StorageClassName: class, VolumeName: volume,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}

func vm(name string, s kubevirtv1.VirtualMachineRunStrategy) *kubevirtv1.VirtualMachine {
	return &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: name},
		Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(s), Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name},
				Annotations: map[string]string{"k8s.v1.cni.cncf.io/networks": "prod-vlan"}},
			Spec: kubevirtv1.VirtualMachineInstanceSpec{
				Domain: kubevirtv1.DomainSpec{
					Firmware: &kubevirtv1.Firmware{UUID: types.UID("5d307ca9-b3ef-428c-8861-06e72d69f223"), Serial: "prod-serial"},
					Devices: kubevirtv1.Devices{
						Disks: []kubevirtv1.Disk{{Name: "root"}},
						Interfaces: []kubevirtv1.Interface{
							{Name: "default", MacAddress: "52:54:00:00:00:01", InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Masquerade: &kubevirtv1.InterfaceMasquerade{}}},
							{Name: "prod", MacAddress: "52:54:00:00:00:02", InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Bridge: &kubevirtv1.InterfaceBridge{}}},
						},
					},
				},
				Networks: []kubevirtv1.Network{
					{Name: "default", NetworkSource: kubevirtv1.NetworkSource{Pod: &kubevirtv1.PodNetwork{}}},
					{Name: "prod", NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: "prod-vlan"}}},
				},
				Volumes: []kubevirtv1.Volume{{Name: "root", VolumeSource: kubevirtv1.VolumeSource{
					PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
						PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: name + "-disk-drbd"}}}}},
			},
		}},
	}
}

func (z *zone) create(cluster string, obj client.Object) {
	z.t.Helper()
	require.NoError(z.t, z.Client(cluster).Create(z.ctx, obj))
}

func (z *zone) setPrimary(vmName string) {
	z.t.Helper()
	r := &srv1alpha1.DRBDResource{}
	require.NoError(z.t, z.Client(env.Primary).Get(z.ctx, client.ObjectKey{Namespace: env.AppNS, Name: "vm-" + vmName}, r))
	before := r.DeepCopy()
	r.Spec.Role = srv1alpha1.RolePrimary
	require.NoError(z.t, z.Client(env.Primary).Patch(z.ctx, r, client.MergeFrom(before)))
}

func (z *zone) waitDRBD(cluster, vmName string, ok func(*srv1alpha1.DRBDResource) bool) {
	z.t.Helper()
	env.Eventually(z.t, timeout, cluster+" "+vmName, func() error {
		r := &srv1alpha1.DRBDResource{}
		if err := z.Client(cluster).Get(z.ctx, client.ObjectKey{Namespace: env.AppNS, Name: "vm-" + vmName}, r); err != nil {
			return err
		}
		if !ok(r) {
			return fmt.Errorf("status %+v", r.Status)
		}
		return nil
	})
}

// drUpToDate is a replica whose every volume is UpToDate.
func drUpToDate(r *srv1alpha1.DRBDResource) bool {
	for _, v := range r.Status.Volumes {
		if v.DiskState != "UpToDate" {
			return false
		}
	}
	return len(r.Status.Volumes) > 0
}
