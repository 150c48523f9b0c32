package kstatus

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/drzone"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/harness"
)

const newVM = "vm-new"

// TestKStatusThroughRequestLife reads each kind of a running zone with
// status.Compute: the zone, the groups on all three clusters, the replicas,
// the replication status and DRPolicies at rest; a ProtectionRequest and a
// FailoverRequest through their whole life; a request that fails. The
// failover is waited for with `kubectl wait --for=condition=Ready`, as the
// README shows.
func TestKStatusThroughRequestLife(t *testing.T) {
	z := drzone.New(t, drzone.Options{VMs: 1, Unprotected: []string{newVM}})
	q := z.Client(env.Quorum)
	key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: env.Namespace, Name: name} }

	t.Run("at rest every kind is Current", func(t *testing.T) {
		waitStatus(t, q, &srv1alpha1.ProtectionZone{}, key(env.ZoneName), status.CurrentStatus)
		waitStatus(t, q, &srv1alpha1.ProtectionGroup{}, key(drzone.Group), status.CurrentStatus)
		waitStatus(t, q, &srv1alpha1.ReplicationGroupStatus{}, key(drzone.Group), status.CurrentStatus)
		for _, c := range []string{env.Primary, env.DR} {
			waitStatus(t, z.Client(c), &srv1alpha1.ProtectionGroup{}, key(drzone.Group), status.CurrentStatus)
			waitStatus(t, z.Client(c), &srv1alpha1.DRBDResource{},
				client.ObjectKey{Namespace: env.AppNS, Name: srv1alpha1.DRBDResourceName(z.VMs[0])}, status.CurrentStatus)
		}
	})

	t.Run("DRPolicy: Current once validated, Failed when it names no zone", func(t *testing.T) {
		for name, clusters := range map[string][]string{"both": {env.Primary, env.DR}, "elsewhere": {env.Primary, "mars"}} {
			require.NoError(t, q.Create(z.Ctx, &drv1alpha1.DRPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name},
				Spec: drv1alpha1.DRPolicySpec{DRClusters: clusters, SchedulingInterval: "0m"}}))
		}
		waitStatus(t, q, &drv1alpha1.DRPolicy{}, key("both"), status.CurrentStatus)
		waitStatus(t, q, &drv1alpha1.DRPolicy{}, key("elsewhere"), status.FailedStatus)
	})

	t.Run("ProtectionRequest: InProgress until Protected, then Current", func(t *testing.T) {
		pr := &srv1alpha1.ProtectionRequest{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "protect-" + newVM},
			Spec: srv1alpha1.ProtectionRequestSpec{VirtualMachine: srv1alpha1.VirtualMachineReference{Namespace: env.AppNS, Name: newVM},
				ZoneRef: srv1alpha1.LocalObjectReference{Name: env.ZoneName}, ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: drzone.Group}}}
		require.NoError(t, q.Create(z.Ctx, pr))
		followRequest(t, q, pr, func() (string, bool) {
			return string(pr.Status.Phase), pr.Status.Phase == srv1alpha1.ProtectionProtected || pr.Status.Phase == srv1alpha1.ProtectionFailed
		}, status.CurrentStatus)
	})

	t.Run("FailoverRequest: InProgress until Completed, then Current; kubectl wait returns", func(t *testing.T) {
		fr := &srv1alpha1.FailoverRequest{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "to-dr"},
			Spec: srv1alpha1.FailoverRequestSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: drzone.Group},
				TargetCluster: env.DR, FailoverType: srv1alpha1.FailoverPlanned}}
		require.NoError(t, q.Create(z.Ctx, fr))
		wait := kubectlWait(t, z, "failoverrequest/"+fr.Name)
		followRequest(t, q, fr, func() (string, bool) {
			return string(fr.Status.Phase), fr.Status.Phase == srv1alpha1.FailoverCompleted || fr.Status.Phase == srv1alpha1.FailoverFailed
		}, status.CurrentStatus)
		out, err := wait()
		require.NoError(t, err, "kubectl wait --for=condition=Ready: %s", out)
		require.Contains(t, out, "condition met")
		require.Equal(t, srv1alpha1.FailoverCompleted, fr.Status.Phase)
	})

	t.Run("a FailoverRequest that fails is Failed, not InProgress", func(t *testing.T) {
		fr := &srv1alpha1.FailoverRequest{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "to-mars"},
			Spec: srv1alpha1.FailoverRequestSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: drzone.Group},
				TargetCluster: "mars", FailoverType: srv1alpha1.FailoverPlanned}}
		require.NoError(t, q.Create(z.Ctx, fr))
		followRequest(t, q, fr, func() (string, bool) {
			return string(fr.Status.Phase), fr.Status.Phase == srv1alpha1.FailoverCompleted || fr.Status.Phase == srv1alpha1.FailoverFailed
		}, status.FailedStatus)
		require.Equal(t, srv1alpha1.FailoverFailed, fr.Status.Phase)
	})
}

// waitStatus waits until obj reads as want.
func waitStatus(t *testing.T, c client.Client, obj client.Object, key client.ObjectKey, want status.Status) {
	t.Helper()
	Wait(t, c, obj, key, want, drzone.Timeout)
}

// followRequest reads obj until it ends (phase reports the phase and whether
// it is terminal): every reading of a written status before then must be
// InProgress, and the end must read as want. A request that succeeds runs
// long enough for a reading in progress to be seen.
func followRequest(t *testing.T, c client.Client, obj client.Object, phase func() (string, bool), want status.Status) {
	t.Helper()
	var inProgress []string
	env.Eventually(t, drzone.Timeout, fmt.Sprintf("%T %s ends", obj, obj.GetName()), func() error {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		p, done := phase()
		res := Compute(t, obj)
		switch {
		case done:
			return nil
		case p == "":
			return fmt.Errorf("no status yet")
		case res.Status != status.InProgressStatus:
			t.Fatalf("phase %s reads %s (%s), want InProgress", p, res.Status, res.Message)
		}
		if len(inProgress) == 0 || inProgress[len(inProgress)-1] != p {
			inProgress = append(inProgress, p)
		}
		return fmt.Errorf("phase %s", p)
	})
	t.Logf("%T %s: InProgress in %s", obj, obj.GetName(), strings.Join(inProgress, ", "))
	if want == status.CurrentStatus {
		require.NotEmpty(t, inProgress, "a request read while it runs")
	}
	res := Compute(t, obj)
	require.Equal(t, want, res.Status, res.Message)
}

// kubectlWait starts `kubectl wait --for=condition=Ready` on the quorum
// cluster and returns a function that waits for it to end.
func kubectlWait(t *testing.T, z *drzone.Zone, resource string) func() (string, error) {
	t.Helper()
	bin, err := exec.Command(filepath.Join(harness.RepoRoot(), "hack", "kubectl.sh")).Output()
	require.NoError(t, err, "building kubectl (hack/kubectl.sh)")
	kubeconfig := filepath.Join(t.TempDir(), "quorum.kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, z.Clusters[env.Quorum].Kubeconfig, 0o600))
	cmd := exec.Command(strings.TrimSpace(string(bin)), "--kubeconfig", kubeconfig, "-n", env.Namespace,
		"wait", "--for=condition=Ready", resource, "--timeout="+drzone.Timeout.String())
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	return func() (string, error) {
		err := cmd.Wait()
		return out.String(), err
	}
}
