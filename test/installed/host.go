package installed

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/siterecovery/siterecovery/test/harness"
	"github.com/siterecovery/siterecovery/test/process"
)

// Host runs the pods of installed charts as a node would, but as processes
// of this machine.
type Host struct {
	// Dir holds the pods' kubeconfigs and logs.
	Dir string
	// Bin returns the folder holding the binaries; it may wait for a build.
	Bin func() (string, error)
	// TokenTTL is how long the pods' tokens are valid; an hour when zero.
	TokenTTL time.Duration

	procs  []*process.Process
	tokens []string
}

// Pod is one pod of a chart, as it runs here.
type Pod struct {
	// Name names the process and its log; Bin is the binary's name.
	Name, Bin string
	// Cluster is where helm installed the pod's workload.
	Cluster *harness.Cluster
	// Kind (Deployment or DaemonSet), Namespace and Workload name the pod's
	// template as helm installed it.
	Kind, Namespace, Workload string
	// Fields are what the kubelet gives the container's env fieldRefs, by
	// field path (spec.nodeName), besides metadata.namespace.
	Fields map[string]string
	// Set replaces the value of flags of the container's args that name the
	// pod's own addresses and folders (a port, a mounted path), which differ
	// on this machine; each must be among the args.
	Set map[string]string
	// Extra are flags added after the container's args: settings the chart
	// has no value for (a shorter probe interval for the sandbox).
	Extra []string
	// Env is added to the process's environment: the simulators' settings.
	Env []string
}

// Processes are the pods started so far, in start order.
func (h *Host) Processes() []*process.Process { return h.procs }

// Tokens are the pods' own tokens, which no log may hold.
func (h *Host) Tokens() []string { return h.tokens }

// Start runs the pod's binary and waits until its readiness probe answers.
// The probes listen on a free port and the metrics on none, unless Set says
// otherwise. The process is returned once it started, also with an error of
// the wait, so that the caller stops it.
func (h *Host) Start(ctx context.Context, p Pod) (*process.Process, error) {
	spec, err := podSpec(ctx, p)
	if err != nil {
		return nil, err
	}
	if len(spec.Containers) != 1 {
		return nil, fmt.Errorf("%s %s/%s runs %d containers, not one", p.Kind, p.Namespace, p.Workload, len(spec.Containers))
	}
	if spec.ServiceAccountName == "" {
		return nil, fmt.Errorf("%s %s/%s names no ServiceAccount", p.Kind, p.Namespace, p.Workload)
	}
	ctr := spec.Containers[0]
	fields := map[string]string{"metadata.namespace": p.Namespace}
	for k, v := range p.Fields {
		fields[k] = v
	}
	vars := map[string]string{}
	var environ []string
	for _, v := range ctr.Env {
		value := v.Value
		if v.ValueFrom != nil {
			if v.ValueFrom.FieldRef == nil {
				return nil, fmt.Errorf("%s: env %s comes from something other than a field", p.Name, v.Name)
			}
			var ok bool
			if value, ok = fields[v.ValueFrom.FieldRef.FieldPath]; !ok {
				return nil, fmt.Errorf("%s: env %s comes from field %s, which is not given", p.Name, v.Name, v.ValueFrom.FieldRef.FieldPath)
			}
		}
		vars[v.Name] = value
		environ = append(environ, v.Name+"="+value)
	}
	probe, err := harness.FreeAddress()
	if err != nil {
		return nil, err
	}
	set := map[string]string{"--metrics-bind-address": "0", "--health-probe-bind-address": probe}
	for k, v := range p.Set {
		set[k] = v
	}
	args, err := containerArgs(p.Name, ctr.Args, vars, set)
	if err != nil {
		return nil, err
	}
	args = append(args, p.Extra...)

	// A DaemonSet's pod runs on its node, and the kubelet mounts a token bound
	// to that pod, which names the node (authentication.kubernetes.io/node-name):
	// the agent's scope policy compares its Node and Lease writes with it.
	var bound *authenticationv1.BoundObjectReference
	if node := p.Fields["spec.nodeName"]; node != "" {
		if bound, err = podOnNode(ctx, p, spec, node); err != nil {
			return nil, err
		}
	}
	kubeconfig := filepath.Join(h.Dir, p.Name+".kubeconfig")
	token, err := h.serviceAccountKubeconfig(ctx, p.Cluster, p.Namespace, spec.ServiceAccountName, kubeconfig, bound)
	if err != nil {
		return nil, err
	}
	h.tokens = append(h.tokens, token)
	bin, err := h.Bin()
	if err != nil {
		return nil, err
	}
	proc := &process.Process{Name: p.Name, Bin: filepath.Join(bin, p.Bin), Kubeconfig: kubeconfig, Args: args, Env: append(environ, p.Env...)}
	if err := proc.Start(h.Dir); err != nil {
		return nil, fmt.Errorf("starting %s: %w", p.Name, err)
	}
	h.procs = append(h.procs, proc)
	deadline := time.Now().Add(time.Minute)
	for {
		if state, exited := proc.Exited(); exited {
			return proc, fmt.Errorf("%s ended (%s) with %s; see %s", p.Name, state, strings.Join(args, " "), proc.LogPath())
		}
		err := ready(ctx, "http://"+probe+"/readyz")
		if err == nil {
			return proc, nil
		}
		if time.Now().After(deadline) {
			return proc, fmt.Errorf("%s does not answer its readiness probe: %w", p.Name, err)
		}
		select {
		case <-ctx.Done():
			return proc, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// podSpec is the pod template of the pod's Deployment or DaemonSet.
func podSpec(ctx context.Context, p Pod) (corev1.PodSpec, error) {
	key := client.ObjectKey{Namespace: p.Namespace, Name: p.Workload}
	switch p.Kind {
	case "Deployment":
		d := &appsv1.Deployment{}
		if err := p.Cluster.Client.Get(ctx, key, d); err != nil {
			return corev1.PodSpec{}, fmt.Errorf("the Deployment %s helm installed: %w", key, err)
		}
		return d.Spec.Template.Spec, nil
	case "DaemonSet":
		d := &appsv1.DaemonSet{}
		if err := p.Cluster.Client.Get(ctx, key, d); err != nil {
			return corev1.PodSpec{}, fmt.Errorf("the DaemonSet %s helm installed: %w", key, err)
		}
		return d.Spec.Template.Spec, nil
	}
	return corev1.PodSpec{}, fmt.Errorf("no pods of kind %s", p.Kind)
}

// containerArgs are a container's args as the kubelet passes them, $(VAR)
// expanded from its env, with the flags of set given their values here.
func containerArgs(name string, args []string, vars, set map[string]string) ([]string, error) {
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
		if strings.Contains(a, "$(") {
			return nil, fmt.Errorf("%s: arg %s names a variable its env does not have", name, a)
		}
		out = append(out, a)
	}
	for flag := range set {
		if !seen[flag] {
			return nil, fmt.Errorf("%s: the container's args have no %s=", name, flag)
		}
	}
	return out, nil
}

// podOnNode creates the pod of a DaemonSet's template on node, as the
// DaemonSet controller would (kwok then runs it), and returns the reference
// a token bound to it carries. A pod left by an earlier start is reused.
func podOnNode(ctx context.Context, p Pod, spec corev1.PodSpec, node string) (*authenticationv1.BoundObjectReference, error) {
	spec.NodeName = node
	po := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}, Spec: spec}
	err := p.Cluster.Client.Create(ctx, po)
	if apierrors.IsAlreadyExists(err) {
		err = p.Cluster.Client.Get(ctx, client.ObjectKeyFromObject(po), po)
	}
	if err != nil {
		return nil, fmt.Errorf("the pod of DaemonSet %s/%s on node %s: %w", p.Namespace, p.Workload, node, err)
	}
	return &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: po.Name, UID: po.UID}, nil
}

// serviceAccountKubeconfig writes a kubeconfig of a cluster's API server
// holding a token of the ServiceAccount (TokenRequest), bound to the pod when
// one is given, as the kubelet mounts one into a pod, and returns the token.
func (h *Host) serviceAccountKubeconfig(ctx context.Context, c *harness.Cluster, namespace, name, path string, bound *authenticationv1.BoundObjectReference) (string, error) {
	ttl := h.TokenTTL
	if ttl == 0 {
		ttl = time.Hour
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(ttl / time.Second)), BoundObjectRef: bound}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := c.Client.SubResource("token").Create(ctx, sa, tr); err != nil {
		return "", fmt.Errorf("minting a token of ServiceAccount %s/%s: %w", namespace, name, err)
	}
	token := tr.Status.Token
	kc := clientcmdapi.NewConfig()
	kc.Clusters["cluster"] = &clientcmdapi.Cluster{Server: c.Config.Host, CertificateAuthorityData: c.Config.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["pod"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: name, Namespace: namespace}
	kc.CurrentContext = "pod"
	return token, clientcmd.WriteToFile(*kc, path)
}

func ready(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
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
