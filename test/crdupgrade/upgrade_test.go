package crdupgrade

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/harness"
)

// added are the CRD files this release added: the previous release had none.
var added = []string{"siterecovery.trilio.io_drbdallocations.yaml"}

const drNamespace = "dr-production"

// TestCRDUpgrade installs the previous release's CRDs on a quorum and a
// workload cluster as helm does (created by the field manager helm), writes
// objects under those schemas, runs the upgrade commands of docs/install.md,
// and checks that the objects are still there and served under the new schemas.
func TestCRDUpgrade(t *testing.T) {
	zone := harness.Start(t, harness.Options{CRDDirectoryPaths: []string{}, Scheme: scheme.New()}, "quorum", "workload")
	ctx := t.Context()
	root := harness.RepoRoot()
	charts := map[string]string{"quorum": "charts/protectionzone/crds", "workload": "charts/workload-control-plane/crds"}

	// The previous release, as helm installed it, with a group written under
	// its schema: status.clusters[].virtualMachines did not exist and is pruned.
	for name, dir := range charts {
		c := zone.Clusters[name]
		installPrevious(t, c.Config, filepath.Join(root, dir))
		require.NoError(t, c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: drNamespace}}))
		pg := group()
		require.NoError(t, c.Client.Create(ctx, pg))
		setVMStatus(t, c.Client, pg)
		require.Empty(t, get(t, c.Client).Status.Clusters[0].VirtualMachines, "%s: the previous schema has no virtualMachines", name)
	}
	requireNotServed(t, zone.Clusters["workload"].Client)

	// The step of docs/install.md, run as written.
	kubeconfigs := map[string]string{}
	for name, c := range zone.Clusters {
		kubeconfigs[name] = filepath.Join(t.TempDir(), name+".kubeconfig")
		require.NoError(t, os.WriteFile(kubeconfigs[name], c.Kubeconfig, 0o600))
	}
	kubectl, err := exec.Command(filepath.Join(root, "hack", "kubectl.sh")).Output()
	require.NoError(t, err, "building kubectl (hack/kubectl.sh)")
	steps := upgradeCommands(t, filepath.Join(root, "docs", "install.md"))
	require.Len(t, steps, 2, "docs/install.md's upgrade applies the CRDs of both charts")
	for _, line := range steps {
		cmd := exec.Command("bash", "-euc", line)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "Q="+kubeconfigs["quorum"], "K="+kubeconfigs["workload"],
			"PATH="+filepath.Dir(strings.TrimSpace(string(kubectl)))+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		t.Logf("$ %s\n%s", line, out)
		require.NoError(t, err, line)
	}

	for name, dir := range charts {
		c := zone.Clusters[name]
		established(t, c.Config, filepath.Join(root, dir))
		// The object of the previous release survived, its spec unchanged.
		pg := get(t, c.Client)
		assert.Equal(t, group().Spec, pg.Spec, name)
		// And is served under the new schema: the new field is kept.
		setVMStatus(t, c.Client, pg)
		assert.Equal(t, []srv1alpha1.VMStatus{{Namespace: "apps", Name: "db", PrintableStatus: "Running", Ready: true}},
			get(t, c.Client).Status.Clusters[0].VirtualMachines, "%s: the new schema keeps virtualMachines", name)
	}
	// The kind the release added is served.
	require.NoError(t, zone.Clusters["workload"].Client.Create(ctx, &srv1alpha1.DRBDAllocation{ObjectMeta: metav1.ObjectMeta{Name: srv1alpha1.DRBDAllocationName}}))
}

func group() *srv1alpha1.ProtectionGroup {
	return &srv1alpha1.ProtectionGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: drNamespace, Name: "prod-pg"},
		Spec: srv1alpha1.ProtectionGroupSpec{
			ActiveCluster:   "primary-cluster",
			ZoneRef:         &srv1alpha1.LocalObjectReference{Name: "production"},
			DesiredState:    srv1alpha1.StateRunning,
			VirtualMachines: []srv1alpha1.VirtualMachineReference{{Namespace: "apps", Name: "db"}},
			Replication:     srv1alpha1.ReplicationSettings{Protocol: srv1alpha1.ProtocolA, RPOObjectiveSeconds: 300},
		},
	}
}

func get(t *testing.T, c client.Client) *srv1alpha1.ProtectionGroup {
	t.Helper()
	pg := &srv1alpha1.ProtectionGroup{}
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Namespace: drNamespace, Name: "prod-pg"}, pg))
	return pg
}

// setVMStatus writes a status that uses the field the release added.
func setVMStatus(t *testing.T, c client.Client, pg *srv1alpha1.ProtectionGroup) {
	t.Helper()
	pg.Status.Clusters = []srv1alpha1.ClusterGroupState{{Cluster: "primary-cluster",
		VirtualMachines: []srv1alpha1.VMStatus{{Namespace: "apps", Name: "db", PrintableStatus: "Running", Ready: true}}}}
	require.NoError(t, c.Status().Update(t.Context(), pg))
}

func requireNotServed(t *testing.T, c client.Client) {
	t.Helper()
	err := c.Get(t.Context(), client.ObjectKey{Name: srv1alpha1.DRBDAllocationName}, &srv1alpha1.DRBDAllocation{})
	require.True(t, meta.IsNoMatchError(err), "the previous release has no DRBDAllocation kind, got %v", err)
}

// previousCRDs reads the previous release's CRDs of a chart: the chart's
// current files but the added ones, the changed ones from testdata/previous.
func previousCRDs(t *testing.T, dir string) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	require.NoError(t, err)
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		base := filepath.Base(f)
		if slices.Contains(added, base) {
			continue
		}
		if _, err := os.Stat(filepath.Join("testdata", "previous", base)); err == nil {
			f = filepath.Join("testdata", "previous", base)
		}
		out = append(out, readCRD(t, f))
	}
	return out
}

func readCRD(t *testing.T, path string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	crd := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, yaml.Unmarshal(data, crd), path)
	return crd
}

func crdClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, apiextensionsv1.AddToScheme(s))
	c, err := client.New(cfg, client.Options{Scheme: s})
	require.NoError(t, err)
	return c
}

// installPrevious creates the previous CRDs as helm does (plain creates by the
// field manager helm) and waits until they are served.
func installPrevious(t *testing.T, cfg *rest.Config, dir string) {
	t.Helper()
	c := crdClient(t, cfg)
	crds := previousCRDs(t, dir)
	for _, crd := range crds {
		require.NoError(t, c.Create(t.Context(), crd, client.FieldOwner("helm")), crd.Name)
	}
	waitEstablished(t, c, crds)
}

// established waits until every current CRD of the chart is served.
func established(t *testing.T, cfg *rest.Config, dir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	require.NoError(t, err)
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		crds = append(crds, readCRD(t, f))
	}
	waitEstablished(t, crdClient(t, cfg), crds)
}

func waitEstablished(t *testing.T, c client.Client, crds []*apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, want := range crds {
		for {
			got := &apiextensionsv1.CustomResourceDefinition{}
			err := c.Get(context.Background(), client.ObjectKey{Name: want.Name}, got)
			if err == nil && isEstablished(got) {
				break
			}
			require.True(t, time.Now().Before(deadline), "CRD %s not established: %v", want.Name, err)
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func isEstablished(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

// upgradeCommands are the CRD lines of the code block of the Upgrade section
// of docs/install.md: the kubectl apply --server-side commands.
func upgradeCommands(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []string
	section, block := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			section = line == "## Upgrade"
		case section && strings.HasPrefix(line, "```"):
			block = !block
		case section && block && strings.Contains(line, "apply --server-side"):
			out = append(out, strings.TrimSpace(line))
		}
	}
	require.NoError(t, sc.Err())
	return out
}
