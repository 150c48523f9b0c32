package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/siterecovery/siterecovery/test/process"
)

// The full control plane a cluster runs when Options.ControlPlane is set:
// kube-controller-manager (garbage collector, namespace, PV binder,
// pvc-protection, Job, EndpointSlice, ServiceAccount and token controllers, node
// lifecycle), kube-scheduler, and kwok playing the nodes and their pods'
// lifecycle. Each runs as its own process with the cluster's admin kubeconfig,
// its output in <cluster dir>/<name>.log.

// KwokNodeAnnotation marks the Nodes kwok plays (its
// --manage-nodes-with-annotation-selector): a test may add Nodes of its own
// that kwok leaves alone.
const KwokNodeAnnotation = "kwok.x-k8s.io/node"

// NodeSpec is one node kwok plays.
type NodeSpec struct {
	Name string
	// Zone is the node's topology.kubernetes.io/zone label.
	Zone string
	// CPU and Memory are its capacity and allocatable ("16", "64Gi").
	CPU, Memory string
	// Address is its InternalIP; empty for kwok's --node-ip.
	Address string
	// Labels are added to the well-known ones.
	Labels map[string]string
}

// DefaultNodes are three workers in two zones, sized like a small production
// node pool, so that spreading and fitting decisions are the scheduler's.
func DefaultNodes(cluster string) []NodeSpec {
	return []NodeSpec{
		{Name: cluster + "-worker-a1", Zone: cluster + "-zone-a", CPU: "16", Memory: "64Gi"},
		{Name: cluster + "-worker-a2", Zone: cluster + "-zone-a", CPU: "16", Memory: "64Gi"},
		{Name: cluster + "-worker-b1", Zone: cluster + "-zone-b", CPU: "16", Memory: "64Gi"},
	}
}

type controlPlane struct {
	procs []*process.Process
}

// startControlPlane starts the controller manager (without the controllers
// off), the scheduler and kwok for c, then creates nodes and waits until kwok
// reports them Ready. With schedulerOnly it starts kube-scheduler alone and
// creates no node.
func (c *Cluster) startControlPlane(ctx context.Context, binDir string, nodes []NodeSpec, schedulerOnly bool, off []string) error {
	kubeconfig := filepath.Join(c.Dir, "admin.kubeconfig")
	if err := os.WriteFile(kubeconfig, c.Kubeconfig, 0o600); err != nil {
		return err
	}
	caFile := filepath.Join(c.Dir, certDir, "serving-ca.crt")
	if err := os.WriteFile(caFile, c.Config.CAData, 0o600); err != nil {
		return err
	}
	scheduler := &process.Process{Name: "kube-scheduler", Bin: filepath.Join(binDir, "kube-scheduler"), Kubeconfig: kubeconfig, Args: []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
	}}
	cp := &controlPlane{}
	c.plane = cp
	if schedulerOnly {
		if err := scheduler.Start(c.Dir); err != nil {
			return fmt.Errorf("starting kube-scheduler: %w", err)
		}
		cp.procs = append(cp.procs, scheduler)
		return nil
	}
	kwokDir, err := KwokDir()
	if err != nil {
		return err
	}
	procs := []*process.Process{
		{Name: "kube-controller-manager", Bin: filepath.Join(binDir, "kube-controller-manager"), Kubeconfig: kubeconfig, Args: []string{
			"--kubeconfig=" + kubeconfig,
			"--leader-elect=false",
			// No serving endpoint: three clusters of one test would race for
			// its port, and nothing here scrapes it.
			"--secure-port=0",
			// The token controller signs ServiceAccount tokens with the key
			// the API server verifies them with.
			"--service-account-private-key-file=" + filepath.Join(c.Dir, certDir, "sa-signer.key"),
			"--root-ca-file=" + caFile,
			// Each controller acts with its own ServiceAccount's rights, as
			// in a kubeadm cluster, so a missing RBAC rule shows here too.
			"--use-service-account-credentials=true",
			"--controllers=" + strings.Join(append([]string{"*"}, prefixed("-", off)...), ","),
		}},
		scheduler,
		{Name: "kwok", Bin: filepath.Join(kwokDir, "kwok"), Kubeconfig: kubeconfig, Args: []string{
			"--kubeconfig=" + kubeconfig,
			"--config=" + filepath.Join(kwokDir, "stages.yaml"),
			"--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector=" + KwokNodeAnnotation + "=fake",
			// kwok's own server (logs, exec) is not used; port 0 keeps the
			// three clusters' kwoks off each other's ports.
			"--server-address=127.0.0.1:0",
			"--node-lease-duration-seconds=40",
		}},
	}
	for _, p := range procs {
		if err := p.Start(c.Dir); err != nil {
			return fmt.Errorf("starting %s: %w", p.Name, err)
		}
		cp.procs = append(cp.procs, p)
	}
	if err := c.createNodes(ctx, nodes); err != nil {
		return err
	}
	return c.waitDefaultServiceAccount(ctx)
}

// prefixed is names, each with prefix.
func prefixed(prefix string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}

// waitDefaultServiceAccount waits until the ServiceAccount controller has
// made the default namespace's default ServiceAccount: until then the
// ServiceAccount admission plugin refuses every pod there, as on a cluster
// just installed.
func (c *Cluster) waitDefaultServiceAccount(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, processStartTimeout)
	defer cancel()
	for {
		err := c.Client.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: "default"}, &corev1.ServiceAccount{})
		if err == nil {
			return nil
		}
		if perr := c.plane.exited(); perr != nil {
			return perr
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no default ServiceAccount in namespace default (kube-controller-manager's output: %s): %w",
				filepath.Join(c.Dir, "kube-controller-manager.log"), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop stops kwok, the scheduler and the controller manager.
func (cp *controlPlane) stop() {
	if cp == nil {
		return
	}
	for i := len(cp.procs) - 1; i >= 0; i-- {
		cp.procs[i].Stop()
	}
}

// exited names a control-plane process that ended, for a start failure.
func (cp *controlPlane) exited() error {
	if cp == nil {
		return nil
	}
	var errs []error
	for _, p := range cp.procs {
		if state, done := p.Exited(); done {
			errs = append(errs, fmt.Errorf("%s exited (%s); its output: %s\n%s", p.Name, state, p.LogPath(), tail(p.LogPath(), 15)))
		}
	}
	return errors.Join(errs...)
}

// createNodes creates the nodes kwok plays and waits until every one is Ready.
func (c *Cluster) createNodes(ctx context.Context, nodes []NodeSpec) error {
	for _, n := range nodes {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:        n.Name,
			Annotations: map[string]string{KwokNodeAnnotation: "fake"},
			Labels: map[string]string{
				corev1.LabelHostname:     n.Name,
				corev1.LabelTopologyZone: n.Zone,
				corev1.LabelOSStable:     "linux",
				corev1.LabelArchStable:   "amd64",
				"type":                   "kwok",
			},
		}}
		for k, v := range n.Labels {
			node.Labels[k] = v
		}
		// Capacity is the kubelet's to report, in the status it registers
		// the Node with (the API server keeps a new Node's status); kwok's
		// node-initialize stage keeps what the status holds.
		capacity := NodeCapacity(n.CPU, n.Memory)
		node.Status.Capacity, node.Status.Allocatable = capacity, capacity
		if n.Address != "" {
			node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.Address}}
		}
		if err := c.Client.Create(ctx, node); err != nil {
			return fmt.Errorf("creating node %s: %w", n.Name, err)
		}
	}
	return c.waitNodesReady(ctx, nodes)
}

func (c *Cluster) waitNodesReady(ctx context.Context, nodes []NodeSpec) error {
	ctx, cancel := context.WithTimeout(ctx, processStartTimeout)
	defer cancel()
	for {
		var notReady []string
		for _, n := range nodes {
			node := &corev1.Node{}
			if err := c.Client.Get(ctx, client.ObjectKey{Name: n.Name}, node); err != nil || !nodeIsReady(node) {
				notReady = append(notReady, n.Name)
			}
		}
		if len(notReady) == 0 {
			return nil
		}
		if err := c.plane.exited(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("nodes %s not Ready (kwok's output: %s): %w", strings.Join(notReady, ", "), filepath.Join(c.Dir, "kwok.log"), ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// NodeCapacity is the capacity a kubelet registers for a node of cpu and
// memory ("16", "64Gi"), with the default 110 pods: without it kube-scheduler
// places no pod on the node.
func NodeCapacity(cpu, memory string) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse(memory),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
}

func nodeIsReady(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
