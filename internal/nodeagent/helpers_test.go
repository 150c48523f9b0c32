package nodeagent_test

import (
	"context"
	"errors"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/drbd"
	"github.com/siterecovery/siterecovery/internal/nodeagent"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/harness"
)

const waitTimeout = 30 * time.Second

// simExec runs the DRBD simulator as one node (DRBDSIM_NODE) and counts drbdadm
// invocations as "command [--force] resource".
type simExec struct {
	env []string
	drbdadm
}

type drbdadm struct {
	mu    *sync.Mutex
	calls map[string]int
}

func newSimExec(node, stateDir string) *simExec {
	return &simExec{env: append(os.Environ(), "DRBDSIM_NODE="+node, "DRBDSIM_STATE_DIR="+stateDir),
		drbdadm: drbdadm{mu: &sync.Mutex{}, calls: map[string]int{}}}
}

func (e *simExec) count(bin string, args []string) {
	// drbdsetup counts for its readings on request ("status <res>") only;
	// events2 runs all the time.
	if base := filepath.Base(bin); base != "drbdadm" && (base != "drbdsetup" || len(args) == 0 || args[0] != "status") {
		return
	}
	var words []string
	for i := 0; i < len(args); i++ {
		if args[i] == "-c" {
			i++
			continue
		}
		// --force counts for promotions only (create-md always passes it).
		if (args[i] == "--force" && len(words) == 1 && words[0] == "primary") || !strings.HasPrefix(args[i], "-") {
			words = append(words, args[i])
		}
	}
	e.mu.Lock()
	e.calls[strings.Join(words, " ")]++
	e.mu.Unlock()
}

// Calls returns how often "drbdadm <what>" ran, e.g. Calls("create-md vm1"),
// or "drbdsetup status <res>".
func (e *simExec) Calls(what string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.calls[what]
}

// CallsFor returns every counted invocation naming res.
func (e *simExec) CallsFor(res string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for k := range e.calls {
		if strings.HasSuffix(k, " "+res) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func (e *simExec) Run(ctx context.Context, bin string, args ...string) ([]byte, error) {
	e.count(bin, args)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = e.env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		code := -1
		var xe *exec.ExitError
		if errors.As(err, &xe) {
			code = xe.ExitCode()
		}
		return out, &drbd.ExitError{Cmd: bin + " " + strings.Join(args, " "), ExitCode: code,
			Stderr: strings.TrimSpace(stderr.String()), Err: err}
	}
	return out, nil
}

func (e *simExec) Start(ctx context.Context, bin string, args ...string) (io.ReadCloser, func() error, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = e.env
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	return out, cmd.Wait, nil
}

// node is one simulated workload node with its agent.
type node struct {
	name, addr, resDir string
	exec               *simExec
	metrics            *prometheus.Registry // the agent's DRBD figures
	cancel             context.CancelFunc
	done               chan error
}

type env struct {
	t                 *testing.T
	cluster           *harness.Cluster
	c                 client.Client
	adm, setup, state string
}

// startAgent runs an agent for n in its own manager until stopAgent or test end.
func (e *env) startAgent(n *node) {
	e.t.Helper()
	n.metrics = prometheus.NewRegistry()
	mgr, err := ctrl.NewManager(e.cluster.Config, ctrl.Options{
		Scheme:                 scheme.New(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 testr.NewWithOptions(e.t, testr.Options{Verbosity: 0}).WithName(n.name),
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
		// As the binary's: the agent hears of its own node's replicas only.
		Cache: cache.Options{ByObject: nodeagent.CacheByObject(n.name)},
	})
	require.NoError(e.t, err)
	require.NoError(e.t, nodeagent.Setup(mgr, nodeagent.Config{
		NodeName: n.name, Hostname: n.name, ReplicationAddress: n.addr, ResourceDir: n.resDir,
		DrbdadmPath: e.adm, DrbdsetupPath: e.setup, Exec: n.exec, Devices: simDevices{},
		ReplicationNetworks: testNetworks, ClaimRecheckInterval: 500 * time.Millisecond,
		Metrics: n.metrics,
	}))
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel, n.done = cancel, make(chan error, 1)
	go func() { n.done <- mgr.Start(ctx) }()
	e.t.Cleanup(func() { e.stopAgent(n) })
}

func (e *env) stopAgent(n *node) {
	if n.cancel == nil {
		return
	}
	n.cancel()
	select {
	case err := <-n.done:
		require.NoError(e.t, err)
	case <-time.After(waitTimeout):
		e.t.Errorf("agent %s did not stop", n.name)
	}
	n.cancel = nil
}

// testNetworks are the replication networks of the test's agents: node-a's
// and node-b's addresses, 10.0.0.0/24, and fd00::/64.
var testNetworks = nodeagent.Networks{netip.MustParsePrefix("10.0.0.0/24"), netip.MustParsePrefix("fd00::/64")}

// simDevices stands for the kubelet's volumeDevices folder: the device of a
// claim the agent accepted is /dev/vg0/<claim> (the DRBD simulator needs no
// file behind a disk).
type simDevices struct{}

func (simDevices) DevicePath(_ context.Context, pvc *corev1.PersistentVolumeClaim) (string, error) {
	return "/dev/vg0/" + pvc.Name, nil
}

// requestLabels tie a DRBDResource and its claims to one protection request.
func requestLabels(request string) map[string]string {
	return map[string]string{srv1alpha1.DRNamespaceLabel: "dr-test", srv1alpha1.ProtectionRequestLabel: request}
}

// drbdResource is a DRBDResource of request "req-<name>" on local whose one
// volume is backed by the claim "<name>-disk" (backingPVC creates it).
func drbdResource(ns, name string, local *node, nodeID, port int32, peer *node) *srv1alpha1.DRBDResource {
	r := &srv1alpha1.DRBDResource{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: requestLabels("req-" + name)},
		Spec: srv1alpha1.DRBDResourceSpec{NodeName: local.name, NodeID: nodeID, Port: port,
			Volumes: []srv1alpha1.DRBDVolume{{Number: 0, Minor: 1000 + port - 7000, Disk: "rootdisk",
				BackingPVC: &srv1alpha1.LocalObjectReference{Name: name + "-disk"}}}},
	}
	if peer != nil {
		r.Spec.Peers = []srv1alpha1.DRBDPeer{{NodeName: peer.name, NodeID: 1 - nodeID, Address: peer.addr, Port: port}}
	}
	return r
}

// backingPVC creates the claim name, bound and in block mode, with labels,
// as the protection flow leaves a backing claim.
func (e *env) backingPVC(ns, name string, labels map[string]string, mode corev1.PersistentVolumeMode) {
	e.t.Helper()
	ctx := context.Background()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			VolumeMode: &mode, VolumeName: "pv-" + ns + "-" + name,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}
	require.NoError(e.t, e.c.Create(ctx, pvc))
	pvc.Status.Phase = corev1.ClaimBound
	require.NoError(e.t, e.c.Status().Update(ctx, pvc))
}

// waitFor polls the DRBDResource until cond holds and returns it.
func (e *env) waitFor(key types.NamespacedName, what string, cond func(*srv1alpha1.DRBDResource) bool) *srv1alpha1.DRBDResource {
	e.t.Helper()
	var last srv1alpha1.DRBDResource
	require.Eventuallyf(e.t, func() bool {
		if err := e.c.Get(context.Background(), key, &last); err != nil {
			return false
		}
		return cond(&last)
	}, waitTimeout, 50*time.Millisecond, "%s: %s; last status: %+v", key, what, last.Status)
	return &last
}

func (e *env) update(key types.NamespacedName, mutate func(*srv1alpha1.DRBDResource)) {
	e.t.Helper()
	require.Eventually(e.t, func() bool {
		var r srv1alpha1.DRBDResource
		if err := e.c.Get(context.Background(), key, &r); err != nil {
			return false
		}
		mutate(&r)
		return e.c.Update(context.Background(), &r) == nil
	}, waitTimeout, 50*time.Millisecond)
}

func cond(r *srv1alpha1.DRBDResource, t string) *metav1.Condition {
	return meta.FindStatusCondition(r.Status.Conditions, t)
}

func condIs(r *srv1alpha1.DRBDResource, t string, s metav1.ConditionStatus, reason string) bool {
	c := cond(r, t)
	return c != nil && c.Status == s && (reason == "" || c.Reason == reason) && c.ObservedGeneration == r.Generation
}

func inSync(r *srv1alpha1.DRBDResource) bool {
	return len(r.Status.Peers) == 1 && len(r.Status.Peers[0].Volumes) == 1 &&
		r.Status.Peers[0].Volumes[0].PercentInSync == "100.00" &&
		r.Status.Peers[0].Volumes[0].PeerDiskState == "UpToDate" &&
		len(r.Status.Volumes) == 1 && r.Status.Volumes[0].DiskState == "UpToDate"
}

func (e *env) tainted(nodeName string) bool {
	var n corev1.Node
	require.NoError(e.t, e.c.Get(context.Background(), types.NamespacedName{Name: nodeName}, &n))
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == srv1alpha1.LostQuorumTaintKey && t.Effect == corev1.TaintEffectNoSchedule
	})
}

// recordStatuses records every version of a DRBDResource that a watch sees from
// now on; the returned function stops the watch and returns them in order.
func (e *env) recordStatuses(key types.NamespacedName) func() []srv1alpha1.DRBDResource {
	e.t.Helper()
	wc, err := client.NewWithWatch(e.cluster.Config, client.Options{Scheme: scheme.New()})
	require.NoError(e.t, err)
	w, err := wc.Watch(context.Background(), &srv1alpha1.DRBDResourceList{}, client.InNamespace(key.Namespace))
	require.NoError(e.t, err)
	var mu sync.Mutex
	var seen []srv1alpha1.DRBDResource
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if r, ok := ev.Object.(*srv1alpha1.DRBDResource); ok && r.Name == key.Name {
				mu.Lock()
				seen = append(seen, *r)
				mu.Unlock()
			}
		}
	}()
	return func() []srv1alpha1.DRBDResource {
		w.Stop()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}
