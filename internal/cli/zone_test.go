package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/cli"
	"github.com/siterecovery/siterecovery/internal/quorum/setup"
	"github.com/siterecovery/siterecovery/test/env"
)

const (
	group   = "production-pg"
	timeout = 90 * time.Second
)

var vms = []string{"vm-00", "vm-01"}

// zone is a running three-cluster zone with a protected group of running VMs
// on the primary, replicated to the DR cluster, and a kubeconfig file of the
// quorum cluster for the CLI.
type zone struct {
	*env.Env
	t          *testing.T
	ctx        context.Context
	kubeconfig string
	// path is the PATH the runbooks run with.
	path string
}

func newZone(t *testing.T) *zone {
	z := &zone{Env: env.New(t, env.Options{}), t: t, ctx: context.Background()}
	for _, c := range []string{env.Primary, env.DR} {
		z.StartWorkload(t, c, env.WorkloadOptions{})
		z.StartAgent(t, c)
	}
	z.StartQuorum(t, setup.QuorumOptions{ProbeInterval: time.Second})
	fabric := z.DRBD(t)
	require.NoError(t, fabric.SetSyncRate(1<<30))
	var refs []srv1alpha1.VirtualMachineReference
	for i, name := range vms {
		refs = append(refs, srv1alpha1.VirtualMachineReference{Name: name, Namespace: env.AppNS})
		z.create(env.Primary, vm(name, kubevirtv1.RunStrategyAlways))
		z.create(env.DR, vm(name, kubevirtv1.RunStrategyHalted))
		z.create(env.Primary, env.DRBDReplica(group, name, env.Primary, env.DR, 0, int32(7000+i)))
		z.create(env.DR, env.DRBDReplica(group, name, env.DR, env.Primary, 1, int32(7000+i)))
	}
	for _, name := range vms {
		z.waitDRBD(env.Primary, name, func(r *srv1alpha1.DRBDResource) bool { return r.Status.MetadataCreated && len(r.Status.Peers) == 1 })
		require.NoError(t, fabric.MarkUpToDate(srv1alpha1.DRBDResourceName(name), env.Nodes[env.Primary].Name))
		r := z.drbd(env.Primary, name)
		before := r.DeepCopy()
		r.Spec.Role = srv1alpha1.RolePrimary
		require.NoError(t, z.Client(env.Primary).Patch(z.ctx, r, client.MergeFrom(before)))
	}
	for _, name := range vms {
		z.waitDRBD(env.Primary, name, func(r *srv1alpha1.DRBDResource) bool {
			return r.Status.Role == "Primary" && len(r.Status.Peers) == 1 && r.Status.Peers[0].ConnectionState == "Connected" &&
				r.Status.Peers[0].Volumes[0].PeerDiskState == "UpToDate"
		})
	}
	z.create(env.Primary, env.WorkloadGroup(group, refs, srv1alpha1.StateRunning))
	z.create(env.DR, env.WorkloadGroup(group, refs, srv1alpha1.StateStopped))
	z.create(env.Quorum, &srv1alpha1.ProtectionGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: group},
		Spec: srv1alpha1.ProtectionGroupSpec{VirtualMachines: refs, ActiveCluster: env.Primary,
			ZoneRef: &srv1alpha1.LocalObjectReference{Name: env.ZoneName}},
	})
	z.installAgentsAndSnapshotClass()
	z.kubeconfig = filepath.Join(t.TempDir(), "quorum.kubeconfig")
	require.NoError(t, os.WriteFile(z.kubeconfig, z.Clusters[env.Quorum].Kubeconfig, 0o600))
	z.waitRunning(env.Primary)
	env.Eventually(t, timeout, "replication status healthy", func() error {
		rgs := &srv1alpha1.ReplicationGroupStatus{}
		if err := z.Client(env.Quorum).Get(z.ctx, client.ObjectKey{Namespace: env.Namespace, Name: group}, rgs); err != nil {
			return err
		}
		if rgs.Status.Health != srv1alpha1.HealthHealthy || !rgs.Status.FailoverReady {
			return fmt.Errorf("health %s, failoverReady %v", rgs.Status.Health, rgs.Status.FailoverReady)
		}
		return nil
	})
	return z
}

// installAgentsAndSnapshotClass creates what a real workload cluster has and
// the in-process agents do not: the agent's DaemonSet with a ready pod on the
// node, and (DR) a VolumeSnapshotClass.
func (z *zone) installAgentsAndSnapshotClass() {
	labels := map[string]string{"app.kubernetes.io/name": "drbd-node-agent"}
	for _, c := range []string{env.Primary, env.DR} {
		z.ensureNamespace(c, "siterecovery-system")
		z.create(c, &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: "siterecovery-system", Name: "drbd-node-agent", Labels: labels},
			Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "agent"}}}}},
		})
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "siterecovery-system", Name: "drbd-node-agent-1", Labels: labels},
			Spec:       corev1.PodSpec{NodeName: env.Nodes[c].Name, Containers: []corev1.Container{{Name: "agent", Image: "agent"}}},
		}
		z.create(c, pod)
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		require.NoError(z.t, z.Client(c).Status().Update(z.ctx, pod))
	}
	z.create(env.DR, &snapshotv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: "csi-snapclass"}, Driver: "csi.example.com",
		DeletionPolicy: snapshotv1.VolumeSnapshotContentDelete})
}

func (z *zone) ensureNamespace(cluster, name string) {
	err := z.Client(cluster).Create(z.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil {
		require.True(z.t, client.IgnoreAlreadyExists(err) == nil, "%v", err)
	}
}

func vm(name string, s kubevirtv1.VirtualMachineRunStrategy) *kubevirtv1.VirtualMachine {
	return &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: name},
		Spec:       kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(s), Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{}},
	}
}

func (z *zone) create(cluster string, obj client.Object) {
	z.t.Helper()
	require.NoError(z.t, z.Client(cluster).Create(z.ctx, obj))
}

func (z *zone) drbd(cluster, vmName string) *srv1alpha1.DRBDResource {
	z.t.Helper()
	r := &srv1alpha1.DRBDResource{}
	require.NoError(z.t, z.Client(cluster).Get(z.ctx, client.ObjectKey{Namespace: env.AppNS, Name: srv1alpha1.DRBDResourceName(vmName)}, r))
	return r
}

func (z *zone) waitDRBD(cluster, vmName string, ok func(*srv1alpha1.DRBDResource) bool) {
	z.t.Helper()
	env.Eventually(z.t, timeout, cluster+" "+vmName, func() error {
		r := &srv1alpha1.DRBDResource{}
		if err := z.Client(cluster).Get(z.ctx, client.ObjectKey{Namespace: env.AppNS, Name: srv1alpha1.DRBDResourceName(vmName)}, r); err != nil {
			return err
		}
		if !ok(r) {
			return fmt.Errorf("status %+v", r.Status)
		}
		return nil
	})
}

func (z *zone) waitRunning(cluster string) {
	z.t.Helper()
	state := srv1alpha1.StateRunning
	env.Eventually(z.t, timeout, "group "+string(state)+" on "+cluster, func() error {
		pg := &srv1alpha1.ProtectionGroup{}
		if err := z.Client(cluster).Get(z.ctx, client.ObjectKey{Namespace: env.Namespace, Name: group}, pg); err != nil {
			return err
		}
		if pg.Status.CurrentState != state {
			return fmt.Errorf("currentState %q", pg.Status.CurrentState)
		}
		return nil
	})
}

// result is one CLI run.
type result struct {
	code           int
	stdout, stderr string
}

// cli runs the CLI in process against the quorum cluster's DR namespace.
func (z *zone) cli(ctx context.Context, args ...string) result {
	z.t.Helper()
	var out, errOut bytes.Buffer
	all := append([]string{"--kubeconfig", z.kubeconfig, "-n", env.Namespace}, args...)
	code := cli.Run(ctx, genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}, all)
	r := result{code: code, stdout: out.String(), stderr: errOut.String()}
	z.t.Logf("kubectl siterecovery %v -> %d\n%s%s", args, code, r.stdout, r.stderr)
	return r
}
