package installdoc

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/siterecovery/siterecovery/internal/boot"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/harness"
	"github.com/siterecovery/siterecovery/test/process"
)

// The binaries of the charts' pods.
var binaries = []string{"./cmd/quorum-manager", "./cmd/pg-controller", "./cmd/drbd-node-agent"}

// host runs the pods of the installed charts as a node would, but as
// processes of this machine: each is the product's binary, built by the
// test, with the arguments and environment of its container as helm
// installed the Deployment or DaemonSet in the API server, and a kubeconfig
// holding a token of the ServiceAccount its pod runs as, nothing more.
type host struct {
	e     *env.Env
	dir   string
	built func(t *testing.T) string
	procs []*process.Process
	// tokens are the processes' own, which no log may hold.
	tokens []string
}

// newHost starts building the binaries, which the first pod waits for, so
// that the build overlaps the clusters' start and the helm installs.
func newHost(t *testing.T) *host {
	t.Helper()
	binDir := t.TempDir()
	done := make(chan struct{})
	var out []byte
	var err error
	go func() {
		defer close(done)
		out, err = process.Build(context.Background(), harness.RepoRoot(), binDir, binaries...)
	}()
	t.Cleanup(func() { <-done })
	return &host{built: func(t *testing.T) string {
		t.Helper()
		<-done
		require.NoError(t, err, "go build %v:\n%s", binaries, out)
		return binDir
	}}
}

// use runs the pods on the zone's clusters, their kubeconfigs and logs in
// the zone's folder, which the harness keeps when the test fails.
func (h *host) use(t *testing.T, e *env.Env) {
	t.Helper()
	h.e, h.dir = e, filepath.Join(e.Zone.Dir, "pods")
	require.NoError(t, os.MkdirAll(h.dir, 0o755))
}

// pod is one pod of a chart, as it runs here.
type pod struct {
	// name names the process and its log; bin is the binary's name.
	name, bin string
	// cluster, kind (Deployment or DaemonSet), namespace and workload name
	// the pod's template as helm installed it.
	cluster, kind, namespace, workload string
	// fields are what the kubelet gives the container's env fieldRefs, by
	// field path (spec.nodeName), besides metadata.namespace.
	fields map[string]string
	// set replaces the value of flags of the container's args that name the
	// pod's own addresses and folders (a port, a mounted path), which differ
	// on this machine; each must be among the args.
	set map[string]string
	// env is added to the process's environment: the simulators' settings.
	env []string
}

// start runs the pod's binary until the test ends and waits until its
// health probe answers. The probes and metrics listen on free ports.
func (h *host) start(t *testing.T, p pod) {
	t.Helper()
	c := h.e.Client(p.cluster)
	spec := h.podSpec(t, c, p)
	require.Len(t, spec.Containers, 1, "%s %s/%s runs one container", p.kind, p.namespace, p.workload)
	ctr := spec.Containers[0]
	require.NotEmpty(t, spec.ServiceAccountName, "%s %s/%s names its ServiceAccount", p.kind, p.namespace, p.workload)

	fields := map[string]string{"metadata.namespace": p.namespace}
	for k, v := range p.fields {
		fields[k] = v
	}
	vars := map[string]string{}
	var environ []string
	for _, v := range ctr.Env {
		value := v.Value
		if v.ValueFrom != nil {
			require.NotNil(t, v.ValueFrom.FieldRef, "%s: env %s comes from a field", p.name, v.Name)
			var ok bool
			value, ok = fields[v.ValueFrom.FieldRef.FieldPath]
			require.True(t, ok, "%s: env %s from field %s, which this test does not give", p.name, v.Name, v.ValueFrom.FieldRef.FieldPath)
		}
		vars[v.Name] = value
		environ = append(environ, v.Name+"="+value)
	}
	probe := freeAddress(t)
	set := map[string]string{"--metrics-bind-address": "0", "--health-probe-bind-address": probe}
	for k, v := range p.set {
		set[k] = v
	}
	args := containerArgs(t, p.name, ctr.Args, vars, set)

	kubeconfig := filepath.Join(h.dir, p.name+".kubeconfig")
	// A DaemonSet's pod runs on its node, and the kubelet mounts a token bound
	// to that pod, which names the node (authentication.kubernetes.io/node-name):
	// the agent's scope policy compares its Node and Lease writes with it.
	var bound *authenticationv1.BoundObjectReference
	if node := p.fields["spec.nodeName"]; node != "" {
		bound = podOnNode(t, c, p, spec, node)
	}
	h.tokens = append(h.tokens, serviceAccountKubeconfig(t, h.e.Clusters[p.cluster], p.namespace, spec.ServiceAccountName, kubeconfig, bound))
	proc := &process.Process{Name: p.name, Bin: filepath.Join(h.built(t), p.bin), Kubeconfig: kubeconfig,
		Args: args, Env: append(environ, p.env...)}
	require.NoError(t, proc.Start(h.dir), "starting %s", p.name)
	// Cleanups run last first: the process stops, then its log's tail is
	// printed if the test failed.
	env.TailOnFailure(t, proc.LogPath())
	t.Cleanup(proc.Stop)
	h.procs = append(h.procs, proc)
	env.Eventually(t, time.Minute, p.name+" answers its readiness probe", func() error {
		if state, exited := proc.Exited(); exited {
			t.Fatalf("%s ended (%s) with %s", p.name, state, strings.Join(args, " "))
		}
		return ready(t, "http://"+probe+"/readyz")
	})
}

// podSpec is the pod template of the pod's Deployment or DaemonSet.
func (h *host) podSpec(t *testing.T, c client.Client, p pod) corev1.PodSpec {
	t.Helper()
	key := client.ObjectKey{Namespace: p.namespace, Name: p.workload}
	switch p.kind {
	case "Deployment":
		d := &appsv1.Deployment{}
		require.NoError(t, c.Get(t.Context(), key, d), "%s: the Deployment helm installed", p.cluster)
		return d.Spec.Template.Spec
	case "DaemonSet":
		d := &appsv1.DaemonSet{}
		require.NoError(t, c.Get(t.Context(), key, d), "%s: the DaemonSet helm installed", p.cluster)
		return d.Spec.Template.Spec
	}
	t.Fatalf("no pods of kind %s", p.kind)
	return corev1.PodSpec{}
}

// containerArgs are a container's args as the kubelet passes them, $(VAR)
// expanded from its env, with the flags of set given their values here.
func containerArgs(t *testing.T, name string, args []string, vars, set map[string]string) []string {
	t.Helper()
	out := make([]string, 0, len(args))
	seen := map[string]bool{}
	for _, a := range args {
		for k, v := range vars {
			a = strings.ReplaceAll(a, "$("+k+")", v)
		}
		if flag, _, ok := strings.Cut(a, "="); ok {
			if v, ok := set[flag]; ok {
				a, seen[flag] = flag+"="+v, true
			}
		}
		require.NotContains(t, a, "$(", "%s: arg %s names a variable its env does not have", name, a)
		out = append(out, a)
	}
	for flag := range set {
		require.True(t, seen[flag], "%s: the container's args have no %s=", name, flag)
	}
	return out
}

// podOnNode creates the pod of a DaemonSet's template on node, as the
// DaemonSet controller would, and returns the reference a token bound to it
// carries.
func podOnNode(t *testing.T, c client.Client, p pod, spec corev1.PodSpec, node string) *authenticationv1.BoundObjectReference {
	t.Helper()
	spec.NodeName = node
	po := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.namespace, Name: p.name}, Spec: spec}
	require.NoError(t, c.Create(t.Context(), po), "%s: the pod of DaemonSet %s/%s on node %s", p.cluster, p.namespace, p.workload, node)
	return &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: po.Name, UID: po.UID}
}

// serviceAccountKubeconfig writes a kubeconfig of a cluster's API server
// holding a token of the ServiceAccount (TokenRequest), bound to the pod when
// one is given, as the kubelet mounts one into a pod, and returns the token.
func serviceAccountKubeconfig(t *testing.T, c *harness.Cluster, namespace, name, path string, bound *authenticationv1.BoundObjectReference) string {
	t.Helper()
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600)), BoundObjectRef: bound}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	require.NoError(t, c.Client.SubResource("token").Create(t.Context(), sa, tr), "minting a token of ServiceAccount %s/%s", namespace, name)
	token := tr.Status.Token
	kc := clientcmdapi.NewConfig()
	kc.Clusters["cluster"] = &clientcmdapi.Cluster{Server: c.Config.Host, CertificateAuthorityData: c.Config.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["pod"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: name, Namespace: namespace}
	kc.CurrentContext = "pod"
	require.NoError(t, clientcmd.WriteToFile(*kc, path))
	return token
}

// requireRunning checks that no pod ended and that no log holds a token:
// the pods' own, or quorum-manager's on the workload clusters (stored).
func (h *host) requireRunning(t *testing.T, stored []string) {
	t.Helper()
	for _, p := range h.procs {
		state, exited := p.Exited()
		assert.False(t, exited, "%s ended: %s", p.Name, state)
		log, err := os.ReadFile(p.LogPath())
		require.NoError(t, err)
		for _, token := range append(append([]string{}, h.tokens...), stored...) {
			assert.NotContains(t, string(log), token[:20], "%s logged a token", p.Name)
		}
	}
}

func ready(t *testing.T, url string) error {
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, http.NoBody)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

// freeAddress is a free loopback address for a listener of a process.
func freeAddress(t *testing.T) string {
	t.Helper()
	addr, err := harness.FreeAddress()
	require.NoError(t, err)
	return addr
}

// webhookFlags serve the webhooks whose configurations a test pointed at
// this machine (env.ServeInstalledWebhooks) on its port, with a certificate
// for localhost, the name the API server dials.
func webhookFlags(o boot.WebhookOptions) map[string]string {
	return map[string]string{"--webhook-port": strconv.Itoa(o.Port), "--webhook-cert-dir": o.CertDir, "--webhook-dns-name": o.DNSName}
}
