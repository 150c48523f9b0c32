package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/cli"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/chartrender"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/harness"
)

// TestCLIConfirmsDisasterPaths runs the CLI's data-losing actions against a
// quorum API server that enforces the protectionzone chart's admission
// policies, as "olivia" (operator role, and a Role that lets her patch
// requests) and as "dana" (disaster-operator role). Without the typed
// confirmation the CLI stops before any write and says what to type and which
// role is needed; with it, olivia's write is refused by the API server with
// the role named, and dana's goes through carrying the confirmation.
func TestCLIConfirmsDisasterPaths(t *testing.T) {
	zone := harness.Start(t, harness.Options{CRDDirectoryPaths: harness.DefaultCRDPaths(), Scheme: scheme.New()}, harness.Quorum)
	q := zone.Clusters[harness.Quorum]
	ctx := t.Context()
	ns := env.Namespace
	require.NoError(t, q.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	objs, err := chartrender.Render("protectionzone", "siterecovery-system")
	require.NoError(t, err)
	for _, obj := range objs {
		switch obj.GetKind() {
		case "ClusterRole", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
			require.NoError(t, q.Client.Create(ctx, obj), "%s %s", obj.GetKind(), obj.GetName())
		}
	}
	require.NoError(t, q.Client.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "annotator"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{srv1alpha1.GroupVersion.Group}, Resources: []string{"failoverrequests", "protectionrequests"}, Verbs: []string{"patch"}}}}))
	for user, roles := range map[string][]rbacv1.RoleRef{
		"olivia": {{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "siterecovery-operator"}, {APIGroup: rbacv1.GroupName, Kind: "Role", Name: "annotator"}},
		"dana":   {{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "siterecovery-disaster-operator"}},
	} {
		for _, ref := range roles {
			require.NoError(t, q.Client.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user + "-" + ref.Name},
				RoleRef: ref, Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}))
		}
	}
	kubeconfig := filepath.Join(t.TempDir(), "quorum.kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, q.Kubeconfig, 0o600))
	runOut := func(user string, args ...string) (int, string, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		all := append([]string{"--kubeconfig", kubeconfig, "--as", user, "-n", ns}, args...)
		code := cli.Run(ctx, genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}, all)
		t.Logf("kubectl siterecovery --as %s %v -> %d\n%s%s", user, args, code, out.String(), errOut.String())
		return code, out.String(), errOut.String()
	}
	run := func(user string, args ...string) (int, string) {
		t.Helper()
		code, _, errOut := runOut(user, args...)
		return code, errOut
	}

	t.Run("unprotect --force", func(t *testing.T) {
		// A finalizer keeps the deleted request readable, as the protection
		// flow's does while it removes replication.
		pr := &srv1alpha1.ProtectionRequest{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Finalizers: []string{"test/hold"}},
			Spec: srv1alpha1.ProtectionRequestSpec{VirtualMachine: srv1alpha1.VirtualMachineReference{Namespace: "apps", Name: "web"},
				ZoneRef: srv1alpha1.LocalObjectReference{Name: env.ZoneName}, ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: "web"}}}
		require.NoError(t, q.Client.Create(ctx, pr))
		t.Cleanup(func() {
			_ = q.Client.Patch(context.Background(), pr, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`)))
		})
		read := func() *srv1alpha1.ProtectionRequest {
			got := &srv1alpha1.ProtectionRequest{}
			require.NoError(t, q.Client.Get(ctx, client.ObjectKeyFromObject(pr), got))
			return got
		}
		// The API server applies a new policy within a moment: wait until it
		// refuses olivia a forced request (a dry run, which writes nothing).
		cfg := rest.CopyConfig(q.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "olivia", Groups: []string{"system:authenticated"}}
		olivia, err := client.New(cfg, client.Options{Scheme: scheme.New()})
		require.NoError(t, err)
		probe := pr.DeepCopy()
		probe.Name, probe.Finalizers = "probe", nil
		probe.Annotations = map[string]string{srv1alpha1.ForceUnprotectAnnotation: "true", srv1alpha1.ConfirmAnnotation: "web"}
		env.Eventually(t, 30*time.Second, "the force-unprotect policy", func() error {
			err := olivia.Create(ctx, probe.DeepCopy(), client.DryRunAll)
			if err != nil && strings.Contains(err.Error(), "siterecovery-confirm-force-unprotect") {
				return nil
			}
			return fmt.Errorf("not yet: %w", err)
		})

		code, stderr := run("dana", "unprotect", "apps/web", "--force")
		require.Equal(t, cli.ExitUsage, code)
		require.Contains(t, stderr, "a forced unprotect leaves VM apps/web on the DR cluster without replication and its disks on the primary cluster out of date, with no failback: confirm with --confirm web (needs the siterecovery-disaster-operator role)")
		code, stderr = run("olivia", "unprotect", "apps/web", "--force", "--confirm", "web")
		require.NotEqual(t, cli.ExitOK, code)
		require.Contains(t, stderr, `user "olivia" may not force the unprotect of VirtualMachine apps/web in dr-production: that needs the disaster-operator role`)
		require.Empty(t, read().Annotations, "nothing was written")
		require.True(t, read().DeletionTimestamp.IsZero(), "nor deleted")

		code, _ = run("dana", "unprotect", "apps/web", "--force", "--confirm", "web")
		require.Equal(t, cli.ExitOK, code)
		got := read()
		require.False(t, got.DeletionTimestamp.IsZero(), "deleted")
		require.Equal(t, "true", got.Annotations[srv1alpha1.ForceUnprotectAnnotation])
		require.Equal(t, "web", got.Annotations[srv1alpha1.ConfirmAnnotation])
	})

	t.Run("failback --discard-diverged", func(t *testing.T) {
		require.NoError(t, q.Client.Create(ctx, &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
			Spec: srv1alpha1.ProtectionGroupSpec{ActiveCluster: env.DR, ZoneRef: &srv1alpha1.LocalObjectReference{Name: env.ZoneName}}}))
		count := func() int {
			frs := &srv1alpha1.FailoverRequestList{}
			require.NoError(t, q.Client.List(ctx, frs, client.InNamespace(ns)))
			return len(frs.Items)
		}
		code, stderr := run("dana", "failover", "web", "--to", env.Primary, "--discard-diverged", "yes")
		require.Equal(t, cli.ExitUsage, code)
		require.Contains(t, stderr, "discarding the writes a fenced-off cluster made while cut off cannot be undone: confirm with --discard-diverged web (needs the siterecovery-disaster-operator role)")
		code, stderr = run("olivia", "failover", "web", "--to", env.Primary, "--discard-diverged", "web")
		require.NotEqual(t, cli.ExitOK, code)
		require.Contains(t, stderr, `user "olivia" may not confirm discarding the diverged writes of group web in dr-production: that needs the disaster-operator role`)
		require.Zero(t, count(), "no request was created")

		code, _ = run("dana", "failover", "web", "--to", env.Primary, "--discard-diverged", "web")
		require.Equal(t, cli.ExitOK, code)
		frs := &srv1alpha1.FailoverRequestList{}
		require.NoError(t, q.Client.List(ctx, frs, client.InNamespace(ns)))
		require.Len(t, frs.Items, 1)
		require.Equal(t, "web", frs.Items[0].Annotations[srv1alpha1.DiscardDivergedAnnotation])
		require.Equal(t, srv1alpha1.FailoverPlanned, frs.Items[0].Spec.FailoverType)
	})
	t.Run("--dry-run=server shows the API server's refusal and writes nothing", func(t *testing.T) {
		require.NoError(t, q.Client.Create(ctx, &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
			Spec: srv1alpha1.ProtectionGroupSpec{ActiveCluster: env.Primary, ZoneRef: &srv1alpha1.LocalObjectReference{Name: env.ZoneName}}}))
		requests := func() int {
			frs := &srv1alpha1.FailoverRequestList{}
			require.NoError(t, q.Client.List(ctx, frs, client.InNamespace(ns)))
			n := 0
			for _, fr := range frs.Items {
				if fr.Spec.ProtectionGroupRef.Name == "db" {
					n++
				}
			}
			return n
		}
		unplanned := []string{"failover", "db", "--to", env.DR, "--unplanned", "--confirm", "db", "--dry-run=server"}
		// The CLI's own check passes (the name is typed); the refusal is
		// the confirmation policy's, evaluated by the API server.
		var code int
		var stderr string
		env.Eventually(t, 30*time.Second, "the disaster-failover policy refuses olivia", func() error {
			code, _, stderr = runOut("olivia", unplanned...)
			if code == cli.ExitError && strings.Contains(stderr, "siterecovery-confirm-disaster-failover") {
				return nil
			}
			return fmt.Errorf("exit %d: %s", code, stderr)
		})
		require.Contains(t, stderr, `user "olivia" may not make an unplanned failover in dr-production: that needs the disaster-operator role`)
		require.Zero(t, requests(), "the refused dry run stored nothing")

		code, stdout, stderr := runOut("dana", append(unplanned, "-o", "yaml")...)
		require.Equal(t, cli.ExitOK, code, stderr)
		fr := &srv1alpha1.FailoverRequest{}
		require.NoError(t, yaml.Unmarshal([]byte(stdout), fr))
		require.True(t, strings.HasPrefix(fr.Name, "db-to-"+env.DR+"-") && len(fr.Name) > len("db-to-"+env.DR+"-"), "the API server named it: %q", fr.Name)
		require.Equal(t, "db", fr.Annotations[srv1alpha1.ConfirmAnnotation])
		code, stdout, _ = runOut("dana", unplanned...)
		require.Equal(t, cli.ExitOK, code)
		require.Regexp(t, `^failoverrequest.siterecovery.trilio.io/db-to-`+env.DR+`-\S+ created \(server dry run\)\n$`, stdout)
		require.Zero(t, requests(), "an admitted dry run stores nothing either")
	})
}
