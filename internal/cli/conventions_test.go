package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
)

// fakeQuorum is a quorum cluster of two DR namespaces, dr-a (the kubeconfig
// context's) and dr-b, each with a zone of clusters primary and dr and one
// group active on primary, and a ProtectionRequest in dr-a; the CLI reads
// it through controller-runtime's fake client.
type fakeQuorum struct {
	t          *testing.T
	c          client.Client
	kubeconfig string
}

func newFakeQuorum(t *testing.T, objs ...client.Object) *fakeQuorum {
	for _, ns := range []string{"dr-a", "dr-b"} {
		objs = append(objs,
			&srv1alpha1.ProtectionZone{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "zone"},
				Spec: srv1alpha1.ProtectionZoneSpec{StorageBackend: srv1alpha1.BackendDRBD, Clusters: []srv1alpha1.ZoneCluster{
					{Name: "primary", Role: srv1alpha1.ClusterRolePrimary, KubeconfigSecretRef: srv1alpha1.SecretKeyReference{Name: "primary"}},
					{Name: "dr", Role: srv1alpha1.ClusterRoleDR, KubeconfigSecretRef: srv1alpha1.SecretKeyReference{Name: "dr"}}}}},
			&srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-" + strings.TrimPrefix(ns, "dr-")},
				Spec: srv1alpha1.ProtectionGroupSpec{ActiveCluster: "primary", ZoneRef: &srv1alpha1.LocalObjectReference{Name: "zone"},
					VirtualMachines: []srv1alpha1.VirtualMachineReference{{Namespace: "apps", Name: "vm-1"}}}})
	}
	objs = append(objs, &srv1alpha1.ProtectionRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "dr-a", Name: "protect-apps-vm-1"},
		Spec: srv1alpha1.ProtectionRequestSpec{VirtualMachine: srv1alpha1.VirtualMachineReference{Namespace: "apps", Name: "vm-1"},
			ZoneRef: srv1alpha1.LocalObjectReference{Name: "zone"}, ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: "web-a"}}})
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	// Nothing listens at the server: every read goes to the fake client.
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: quorum, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: admin, user: {token: not-a-secret}}]
contexts: [{name: quorum, context: {cluster: quorum, user: admin, namespace: dr-a}}]
current-context: quorum
`), 0o600))
	return &fakeQuorum{t: t, c: fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).Build(), kubeconfig: kubeconfig}
}

// run runs the CLI with args and returns its exit code, stdout and stderr.
func (q *fakeQuorum) run(args ...string) (int, string, string) {
	q.t.Helper()
	var out, errOut bytes.Buffer
	o := &Options{Flags: genericclioptions.NewConfigFlags(true), IOStreams: genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}, quorum: q.c}
	root := newRootCommand(o)
	root.SetArgs(append([]string{"--kubeconfig", q.kubeconfig}, args...))
	err := root.ExecuteContext(context.Background())
	if err != nil {
		errOut.WriteString("error: " + err.Error() + "\n")
	}
	q.t.Logf("kubectl siterecovery %v -> %d\n%s%s", args, Code(err), out.String(), errOut.String())
	return Code(err), out.String(), errOut.String()
}

func (q *fakeQuorum) ok(args ...string) string {
	q.t.Helper()
	code, out, errOut := q.run(args...)
	require.Equal(q.t, ExitOK, code, errOut)
	return out
}

// Every -o form of status prints the report (or its groups) as kubectl would.
func TestStatusOutputForms(t *testing.T) {
	q := newFakeQuorum(t)

	table := q.ok("status")
	assert.Regexp(t, `GROUP\s+ACTIVE\s+STATE\s+HEALTH`, table)
	assert.Regexp(t, `web-a\s+primary`, table)
	assert.NotContains(t, table, "ZONE READY", "wide columns only with -o wide")
	assert.Contains(t, q.ok("status", "-o", "table"), "web-a", "-o table is the default spelled out")

	wide := q.ok("status", "-o", "wide")
	assert.Regexp(t, `CLI ACCESS\s+BACKEND\s+ZONE READY\s+MESSAGE`, wide)
	assert.Regexp(t, `LOCK\s+ZONE\s+VMS`, wide)
	assert.Regexp(t, `web-a\s+primary.*\s+zone\s+1\n`, wide)

	noHeaders := q.ok("status", "--no-headers")
	assert.NotContains(t, noHeaders, "GROUP")
	assert.Regexp(t, `(?m)^web-a\s+primary`, noHeaders)

	var rep StatusReport
	require.NoError(t, json.Unmarshal([]byte(q.ok("status", "-o", "json")), &rep))
	assert.Equal(t, "StatusReport", rep.Kind)
	assert.Equal(t, ReportGroupVersion.String(), rep.APIVersion)
	require.Len(t, rep.Namespaces, 1)
	assert.Equal(t, "web-a", rep.Namespaces[0].Groups[0].Name)

	rep = StatusReport{}
	require.NoError(t, yaml.Unmarshal([]byte(q.ok("status", "-o", "yaml")), &rep))
	assert.Equal(t, "dr-a", rep.Namespaces[0].Namespace)

	assert.Equal(t, "protectiongroup.siterecovery.trilio.io/web-a\n", q.ok("status", "-o", "name"))
	assert.Equal(t, "primary", q.ok("status", "-o", "jsonpath={.namespaces[0].groups[0].activeCluster}"))
	assert.Equal(t, "web-a:primary", q.ok("status", "-o", `go-template={{range .namespaces}}{{range .groups}}{{.name}}:{{.activeCluster}}{{end}}{{end}}`))
	tmpl := filepath.Join(t.TempDir(), "groups.jsonpath")
	require.NoError(t, os.WriteFile(tmpl, []byte(`{.namespaces[*].groups[*].name}`), 0o600))
	assert.Equal(t, "web-a", q.ok("status", "-o", "jsonpath-file="+tmpl))

	code, _, errOut := q.run("status", "-o", "xml")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, errOut, `unknown output format "xml"`)
	for _, verb := range []string{"validate", "version"} {
		code, _, errOut = q.run(verb, "-o", "name")
		assert.Equal(t, ExitUsage, code, "a report has no name")
		assert.Contains(t, errOut, "this command prints a report", verb)
	}
}

// The DR namespace is -n, else the kubeconfig context's; -A lists every DR
// namespace with a NAMESPACE column. No verb lists every namespace unasked.
func TestNamespaceDefaultsAndAllNamespaces(t *testing.T) {
	q := newFakeQuorum(t)

	out := q.ok("status")
	assert.Contains(t, out, "DR namespace dr-a")
	assert.NotContains(t, out, "web-b", "the context's namespace only")

	out = q.ok("status", "-n", "dr-b")
	assert.Contains(t, out, "web-b")
	assert.NotContains(t, out, "web-a")

	out = q.ok("status", "-A")
	assert.Regexp(t, `NAMESPACE\s+GROUP\s+ACTIVE`, out)
	assert.Regexp(t, `dr-a\s+web-a\s+primary`, out)
	assert.Regexp(t, `dr-b\s+web-b\s+primary`, out)
	assert.Equal(t, "protectiongroup.siterecovery.trilio.io/web-a\nprotectiongroup.siterecovery.trilio.io/web-b\n", q.ok("status", "--all-namespaces", "-o", "name"))

	// A group is looked for where the user said, or everywhere with -A.
	code, _, errOut := q.run("status", "web-b")
	assert.Equal(t, ExitError, code)
	assert.Contains(t, errOut, `no ProtectionGroup "web-b" in DR namespace dr-a`)
	var rep StatusReport
	require.NoError(t, json.Unmarshal([]byte(q.ok("status", "web-b", "-A", "-o", "json")), &rep))
	require.Len(t, rep.Namespaces, 1)
	assert.Equal(t, "dr-b", rep.Namespaces[0].Namespace)
}

// --dry-run=client prints what each writing verb would send and sends
// nothing; a bare --dry-run, or one with --wait, is a usage error.
func TestDryRunClient(t *testing.T) {
	q := newFakeQuorum(t)
	ctx := context.Background()

	out := q.ok("failover", "web-a", "--to", "dr", "--dry-run=client")
	assert.Equal(t, "failoverrequest.siterecovery.trilio.io/web-a-to-dr-<generated> created (dry run)\n", out)
	fr := &srv1alpha1.FailoverRequest{}
	require.NoError(t, yaml.Unmarshal([]byte(q.ok("failover", "web-a", "--to", "dr", "--unplanned", "--confirm", "web-a", "--dry-run=client", "-o", "yaml")), fr))
	assert.Equal(t, "FailoverRequest", fr.Kind)
	assert.Equal(t, "dr", fr.Spec.TargetCluster)
	assert.Equal(t, srv1alpha1.FailoverUnplanned, fr.Spec.FailoverType)
	assert.Equal(t, "web-a", fr.Annotations[srv1alpha1.ConfirmAnnotation], "the confirmation the API server's policy reads")
	code, _, errOut := q.run("failover", "web-a", "--to", "dr", "--unplanned", "--dry-run=client")
	assert.Equal(t, ExitUsage, code, "the CLI's own --confirm check runs in a dry run too")
	assert.Contains(t, errOut, "--confirm web-a")

	assert.Equal(t, "testfailover.siterecovery.trilio.io/web-a-test-<generated> created (dry run)\n", q.ok("test-failover", "web-a", "--dry-run=client"))
	assert.Equal(t, "protectionrequest.siterecovery.trilio.io/protect-apps-vm-2 created (dry run)\n",
		q.ok("protect", "apps/vm-2", "--group", "web-a", "--dry-run=client"))
	assert.Equal(t, "protectionrequest.siterecovery.trilio.io/protect-apps-vm-1\n",
		q.ok("unprotect", "apps/vm-1", "--force", "--confirm", "vm-1", "--dry-run=client", "-o", "name"))

	frs := &srv1alpha1.FailoverRequestList{}
	require.NoError(t, q.c.List(ctx, frs))
	assert.Empty(t, frs.Items, "no FailoverRequest written")
	tfs := &srv1alpha1.TestFailoverList{}
	require.NoError(t, q.c.List(ctx, tfs))
	assert.Empty(t, tfs.Items, "no TestFailover written")
	prs := &srv1alpha1.ProtectionRequestList{}
	require.NoError(t, q.c.List(ctx, prs))
	require.Len(t, prs.Items, 1, "no ProtectionRequest written, none deleted")
	assert.Empty(t, prs.Items[0].Annotations, "nor patched")

	for _, args := range [][]string{
		{"failover", "web-a", "--to", "dr", "--dry-run"},
		{"failover", "web-a", "--to", "dr", "--dry-run=maybe"},
		{"failback", "web-a", "--dry-run=client", "--wait"},
		{"protect", "apps/vm-2", "--group", "web-a", "--dry-run=server", "--wait"},
	} {
		code, _, _ := q.run(args...)
		assert.Equal(t, ExitUsage, code, "%v", args)
	}
}

// --dry-run=server sends each write with dryRun=All (the fake client, like
// the API server, then stores nothing) and says so.
func TestDryRunServerSendsDryRunAll(t *testing.T) {
	q := newFakeQuorum(t)
	ctx := context.Background()
	out := q.ok("failback", "web-a", "--dry-run=server")
	assert.Contains(t, out, " created (server dry run)")
	out = q.ok("unprotect", "apps/vm-1", "--dry-run=server")
	assert.Equal(t, "protectionrequest.siterecovery.trilio.io/protect-apps-vm-1 deleted (server dry run)\n", out)
	frs := &srv1alpha1.FailoverRequestList{}
	require.NoError(t, q.c.List(ctx, frs))
	assert.Empty(t, frs.Items)
	prs := &srv1alpha1.ProtectionRequestList{}
	require.NoError(t, q.c.List(ctx, prs))
	assert.Len(t, prs.Items, 1)

	// Without a dry run the same verb writes, and prints as kubectl create.
	out = q.ok("failback", "web-a")
	assert.Regexp(t, `^failoverrequest.siterecovery.trilio.io/web-a-to-primary-\S+ created\n$`, out)
	require.NoError(t, q.c.List(ctx, frs))
	assert.Len(t, frs.Items, 1)
}

// Each command's help shows kubectl's conventions: -o on every command that
// prints, -A on the list verb, --dry-run on every verb that writes.
func TestHelpShowsKubectlConventions(t *testing.T) {
	q := newFakeQuorum(t)
	for _, verb := range []string{"status", "validate", "failover", "failback", "test-failover", "protect", "unprotect", "version"} {
		help := q.ok(verb, "--help")
		assert.Contains(t, help, "-o, --output string", verb)
		assert.Contains(t, help, "jsonpath", verb)
		assert.Contains(t, help, "-n, --namespace string", verb)
	}
	assert.Contains(t, q.ok("status", "--help"), "-A, --all-namespaces")
	assert.Contains(t, q.ok("status", "--help"), "wide")
	for _, verb := range []string{"failover", "failback", "test-failover", "protect", "unprotect"} {
		assert.Contains(t, q.ok(verb, "--help"), `--dry-run string[="unchanged"]`, verb)
	}
	root := q.ok("--help")
	for _, want := range []string{"completion", "version", "-A lists every DR namespace", "--dry-run=client|server", "Exit codes:"} {
		assert.Contains(t, root, want)
	}
}

// Names complete from the quorum cluster: groups, the clusters a group may
// move to, zones, the VMs of ProtectionRequests, DR namespaces.
func TestCompletion(t *testing.T) {
	q := newFakeQuorum(t)
	complete := func(args ...string) []string {
		t.Helper()
		out := q.ok(append([]string{"__complete"}, args...)...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		require.NotEmpty(t, lines)
		require.Equal(t, ":4", lines[len(lines)-1], "NoFileComp: %s", out)
		return lines[:len(lines)-1]
	}
	assert.Equal(t, []string{"web-a"}, complete("failover", ""))
	assert.Equal(t, []string{"web-b"}, complete("status", "-n", "dr-b", "w"))
	assert.Equal(t, []string{"dr"}, complete("failover", "web-a", "--to", ""), "not the cluster the group is active on")
	assert.Equal(t, []string{"apps/vm-1"}, complete("unprotect", ""))
	assert.Equal(t, []string{"zone", "group"}, complete("validate", ""))
	assert.Equal(t, []string{"zone"}, complete("validate", "zone", ""))
	assert.Equal(t, []string{"zone"}, complete("protect", "apps/vm-2", "--zone", ""))
	assert.Equal(t, []string{"dr-a", "dr-b"}, complete("status", "-n", ""))

	for _, shell := range []string{"bash", "zsh", "fish"} {
		assert.Contains(t, q.ok("completion", shell), "kubectl-siterecovery", shell)
	}
}

// version prints the CLI's build and the quorum-manager Deployment's version
// label and image in the DR namespace.
func TestVersionReadsTheQuorumManagerDeployment(t *testing.T) {
	q := newFakeQuorum(t, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "dr-a", Name: "quorum-manager-dr-a",
		Labels: map[string]string{managerNameLabel: managerName, managerVersionLabel: "0.4.2"}},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: managerContainer, Image: "ghcr.io/siterecovery/quorum-manager:0.4.2"}}}}}})
	var rep VersionReport
	require.NoError(t, json.Unmarshal([]byte(q.ok("version", "-o", "json")), &rep))
	assert.Equal(t, "Version", rep.Kind)
	assert.NotEmpty(t, rep.ClientVersion.Version)
	assert.NotEmpty(t, rep.ClientVersion.GoVersion)
	require.NotNil(t, rep.ServerVersion)
	require.Len(t, rep.ServerVersion.QuorumManagers, 1)
	assert.Equal(t, ManagerVersion{Deployment: "quorum-manager-dr-a", Version: "0.4.2", Image: "ghcr.io/siterecovery/quorum-manager:0.4.2", Replicas: 1},
		rep.ServerVersion.QuorumManagers[0])
	assert.Regexp(t, `(?m)^Server Version: 0.4.2 \(Deployment dr-a/quorum-manager-dr-a, image ghcr.io/siterecovery/quorum-manager:0.4.2, 0/1 ready\)$`, q.ok("version"))

	out := q.ok("version", "--client")
	assert.Contains(t, out, "Client Version: ")
	assert.NotContains(t, out, "Server Version")

	code, out, errOut := q.run("version", "-n", "dr-b")
	assert.Equal(t, ExitError, code, "no quorum-manager there")
	assert.Contains(t, out, "Client Version: ", "the client's version is printed anyway")
	assert.Contains(t, errOut, "no quorum-manager Deployment (label app.kubernetes.io/name=quorum-manager, container manager) in DR namespace dr-b")
}

// The -ldflags values are the client version, as make krew-manifest sets them.
func TestClientVersionFromLdflags(t *testing.T) {
	defer func(v, c string) { version, commit = v, c }(version, commit)
	version, commit = "v9.9.9", "0123abc"
	v := clientVersion()
	assert.Equal(t, "v9.9.9", v.Version)
	assert.Equal(t, "0123abc", v.Commit)
}
