package nodeagent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/nodeagent"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/harness"
	drbdsim "github.com/siterecovery/siterecovery/test/sim/drbd"
)

// syncBuffer collects an agent's log lines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) line(prefix, args string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.WriteString(prefix + " " + args + "\n")
}

func (b *syncBuffer) bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// startLoggedAgent is startAgent with every log line of the agent, at every
// verbosity, kept in logs.
func (e *env) startLoggedAgent(n *node, logs *syncBuffer) {
	e.t.Helper()
	mgr, err := ctrl.NewManager(e.cluster.Config, ctrl.Options{
		Scheme:                 scheme.New(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 funcr.New(logs.line, funcr.Options{Verbosity: 10}).WithName(n.name),
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(e.t, err)
	require.NoError(e.t, nodeagent.Setup(mgr, nodeagent.Config{
		NodeName: n.name, Hostname: n.name, ReplicationAddress: n.addr, ResourceDir: n.resDir,
		DrbdadmPath: e.adm, DrbdsetupPath: e.setup, Exec: n.exec, Devices: simDevices{},
		ReplicationNetworks: testNetworks,
	}))
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel, n.done = cancel, make(chan error, 1)
	go func() { n.done <- mgr.Start(ctx) }()
	e.t.Cleanup(func() { e.stopAgent(n) })
}

// peerSecret writes the peer-auth Secret name of DR namespace dr-test with
// value at revision, as quorum-manager does.
func (e *env) peerSecret(name, revision, value string) {
	e.t.Helper()
	ctx := context.Background()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: srv1alpha1.PeerAuthNamespace("dr-test"), Name: name}}
	_, err := ctrl.CreateOrUpdate(ctx, e.c, s, func() error {
		s.Annotations = map[string]string{srv1alpha1.PeerAuthRevisionAnnotation: revision}
		s.Data = map[string][]byte{srv1alpha1.PeerAuthSecretKey: []byte(value)}
		return nil
	})
	require.NoError(e.t, err)
}

// TestAgentPeerAuthentication: the agents render the shared secret of the
// peer-auth Secret the spec names into their resource files (0600), connect,
// follow a rotation, wait with a condition naming the Secret while it is
// missing or of another revision; and the secret's bytes appear in no log
// line of the agents, no event and no DRBDResource.
func TestAgentPeerAuthentication(t *testing.T) {
	harness.RequireAPIServers(t)
	z := harness.Start(t, harness.Options{CRDDirectoryPaths: harness.DefaultCRDPaths(), Scheme: scheme.New()}, harness.Primary)
	cl := z.Clusters[harness.Primary]
	dir := t.TempDir()
	e := &env{t: t, cluster: cl, c: cl.Client, state: filepath.Join(dir, "state")}
	e.adm, e.setup = drbdsim.Build(t, dir)
	fabric := &drbdsim.Fabric{StateDir: e.state}
	ctx := context.Background()
	a := &node{name: "node-a", addr: "10.0.0.1", resDir: filepath.Join(dir, "a"), exec: newSimExec("node-a", e.state)}
	b := &node{name: "node-b", addr: "10.0.0.2", resDir: filepath.Join(dir, "b"), exec: newSimExec("node-b", e.state)}
	for _, n := range []*node{a, b} {
		require.NoError(t, e.c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name}}))
	}
	for _, ns := range []string{"site-a", "site-b", srv1alpha1.PeerAuthNamespace("dr-test")} {
		require.NoError(t, e.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	logs := &syncBuffer{}
	e.startLoggedAgent(a, logs)
	e.startLoggedAgent(b, logs)

	const first, second = "Zmlyc3Qtc2VjcmV0LW9mLXZtMS0wMTIzNDU2Nzg5YWJj", "c2Vjb25kLXNlY3JldC1vZi12bTEtMDEyMzQ1Njc4OWFi"
	auth := func(secret, revision string) *srv1alpha1.DRBDPeerAuthentication {
		return &srv1alpha1.DRBDPeerAuthentication{SecretRef: srv1alpha1.LocalObjectReference{Name: secret},
			Algorithm: srv1alpha1.PeerAuthSHA256, Revision: revision}
	}
	pair := func(name string, port int32, pa *srv1alpha1.DRBDPeerAuthentication) (ka, kb types.NamespacedName) {
		ra, rb := drbdResource("site-a", name, a, 0, port, b), drbdResource("site-b", name, b, 1, port, a)
		ra.Spec.PeerAuthentication, rb.Spec.PeerAuthentication = pa, pa
		e.backingPVC("site-a", name+"-disk", ra.Labels, corev1.PersistentVolumeBlock)
		e.backingPVC("site-b", name+"-disk", rb.Labels, corev1.PersistentVolumeBlock)
		require.NoError(t, e.c.Create(ctx, ra))
		require.NoError(t, e.c.Create(ctx, rb))
		return client.ObjectKeyFromObject(ra), client.ObjectKeyFromObject(rb)
	}
	connected := func(r *srv1alpha1.DRBDResource) bool {
		return condIs(r, srv1alpha1.ConditionConfigured, metav1.ConditionTrue, srv1alpha1.ReasonApplied) &&
			condIs(r, srv1alpha1.ConditionConnected, metav1.ConditionTrue, "")
	}
	resFile := func(n *node, name string) string {
		data, err := os.ReadFile(filepath.Join(n.resDir, name+".res"))
		require.NoError(t, err)
		fi, err := os.Stat(filepath.Join(n.resDir, name+".res"))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "%s's resource file holds the secret", n.name)
		return string(data)
	}

	// Missing first: the agent waits, names the Secret, runs no drbdadm.
	a1, b1 := pair("vm1", 7000, auth("vm1", "r1"))
	for _, k := range []types.NamespacedName{a1, b1} {
		r := e.waitFor(k, "waiting for the secret", func(r *srv1alpha1.DRBDResource) bool {
			return condIs(r, srv1alpha1.ConditionConfigured, metav1.ConditionFalse, nodeagent.ReasonPeerSecretMissing)
		})
		assert.Contains(t, cond(r, srv1alpha1.ConditionConfigured).Message, "dr-test-drbd-auth/vm1")
	}
	assert.Empty(t, a.exec.CallsFor("vm1"), "no drbdadm without the secret")

	// Another revision than the spec's: still waiting.
	e.peerSecret("vm1", "r0", second)
	e.waitFor(a1, "revision pending", func(r *srv1alpha1.DRBDResource) bool {
		return condIs(r, srv1alpha1.ConditionConfigured, metav1.ConditionFalse, nodeagent.ReasonPeerSecretPending)
	})

	e.peerSecret("vm1", "r1", first)
	e.waitFor(a1, "connected", connected)
	e.waitFor(b1, "connected", connected)
	for _, n := range []*node{a, b} {
		f := resFile(n, "vm1")
		assert.Contains(t, f, "cram-hmac-alg sha256;")
		assert.Contains(t, f, `shared-secret "`+first+`";`)
	}
	require.NoError(t, fabric.MarkUpToDate("vm1", "node-a"))
	e.waitFor(b1, "in sync", inSync)

	// Rotation: the Secret first, then the revision in both specs.
	e.peerSecret("vm1", "r2", second)
	for _, k := range []types.NamespacedName{a1, b1} {
		e.update(k, func(r *srv1alpha1.DRBDResource) { r.Spec.PeerAuthentication.Revision = "r2" })
	}
	for _, n := range []*node{a, b} {
		require.Eventually(t, func() bool {
			data, err := os.ReadFile(filepath.Join(n.resDir, "vm1.res"))
			return err == nil && bytes.Contains(data, []byte(`shared-secret "`+second+`";`))
		}, waitTimeout, 50*time.Millisecond, "%s renders the new secret", n.name)
	}
	e.waitFor(a1, "still connected after the rotation", connected)
	// A reconnect authenticates with the new secret on both sides.
	require.NoError(t, fabric.Disconnect("vm1"))
	require.NoError(t, fabric.Connect("vm1"))
	e.waitFor(b1, "reconnected on the new secret", func(r *srv1alpha1.DRBDResource) bool { return connected(r) && inSync(r) })

	// Neither secret in any log line, event or DRBDResource.
	var evs eventsv1.EventList
	require.NoError(t, e.c.List(ctx, &evs))
	var corev1Evs corev1.EventList
	require.NoError(t, e.c.List(ctx, &corev1Evs))
	var drs srv1alpha1.DRBDResourceList
	require.NoError(t, e.c.List(ctx, &drs))
	require.NotEmpty(t, logs.bytes())
	for what, v := range map[string]any{"events": evs, "core events": corev1Evs, "DRBDResources": drs} {
		data, err := json.Marshal(v)
		require.NoError(t, err)
		for _, s := range []string{first, second} {
			assert.NotContains(t, string(data), s, "a secret in %s", what)
		}
	}
	for _, s := range []string{first, second} {
		assert.NotContains(t, string(logs.bytes()), s, "a secret in the agents' logs")
	}
}
