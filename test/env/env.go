package env

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/harness"
)

// Names used by every zone the package builds.
const (
	Quorum    = "quorum"
	Primary   = "primary-cluster"
	DR        = "dr-cluster"
	Namespace = "dr-production"
	ZoneName  = "production"
	AppNS     = "apps"
)

// Env is a running three-cluster zone.
type Env struct {
	Zone     *harness.Zone
	Scheme   *runtime.Scheme
	Clusters map[string]*harness.Cluster

	// Latency holds the proxy of each cluster with Options.Latency.
	Latency map[string]*LatencyProxy

	drbd *drbdNetwork
	log  controllerLog
	// controlPlane is Options.ControlPlane (controlplane.go).
	controlPlane bool
}

// Options tune a zone.
type Options struct {
	// Backend is the zone's storage backend; DRBD by default.
	Backend srv1alpha1.StorageBackend
	// MintedKubeconfigs connects quorum-manager to the workload clusters as an
	// operator would: the workload chart's quorum identity is installed on each,
	// and scripts/bootstrap-zone.sh mints its tokens and writes the kubeconfig
	// Secrets and the ProtectionZone, instead of admin kubeconfigs.
	// MintedKubeconfigsEnv set to any value does the same for every zone.
	MintedKubeconfigs bool
	// CompanionSecrets installs the quorum identity of MintedKubeconfigs
	// with the workload chart's quorumAccess.companionSecrets: its rights on
	// Secrets, which pg-sync needs to copy a group's companion Secrets.
	CompanionSecrets bool
	// Latency puts a LatencyProxy (latency.go) in front of each cluster's
	// API server, on quorum-manager's side only: the kubeconfig Secrets and
	// the connection of StartQuorum go through it, the workload tier and the
	// test's own clients do not. Its delay is 0 until a test sets it. Not
	// with MintedKubeconfigs.
	Latency bool
	// ControlPlane runs every cluster as a whole control plane
	// (controlplane.go): kube-controller-manager, kube-scheduler and kwok's
	// nodes, VMIs in launcher pods. For the flows' end-to-end tests; a
	// narrower test keeps the bare API server, which starts faster.
	ControlPlane bool
	// Instancetypes installs KubeVirt's namespaced VirtualMachineInstancetype
	// and VirtualMachinePreference CRDs on the workload clusters, for the
	// tests of companions of those kinds; other zones go without them.
	Instancetypes bool
	// ControllersOff are kube-controller-manager's controllers a
	// ControlPlane zone runs without (harness.Options.ControllersOff).
	ControllersOff []string
}

// MintedKubeconfigsEnv names the variable that, set to any value, builds every
// zone with MintedKubeconfigs, so that any integration test proves the quorum
// identity on the workload clusters grants what quorum-manager does there:
//
//	SITERECOVERY_MINTED_KUBECONFIGS=1 go test ./test/e2e/protection/ -run TestX
const MintedKubeconfigsEnv = "SITERECOVERY_MINTED_KUBECONFIGS"

// New starts quorum, primary and DR clusters in parallel, creates the DR namespace
// on all three and the app namespace on the workload clusters, stores each workload
// cluster's kubeconfig in a Secret on the quorum cluster and creates the zone.
func New(t testing.TB, opts Options) *Env {
	t.Helper()
	opts.MintedKubeconfigs = opts.MintedKubeconfigs || os.Getenv(MintedKubeconfigsEnv) != ""
	s := scheme.New()
	// kube-scheduler places the pods the product creates (replica holders)
	// on the simulated nodes, as it would in a real cluster.
	backend := opts.Backend
	if backend == "" {
		backend = srv1alpha1.BackendDRBD
	}
	ho := harness.Options{CRDDirectoryPaths: harness.DefaultCRDPaths(), ClusterCRDPaths: crdPathsOf(backend, opts.Instancetypes), Scheme: s, Scheduler: true}
	if opts.ControlPlane {
		ho = harness.Options{CRDDirectoryPaths: harness.DefaultCRDPaths(), ClusterCRDPaths: crdPathsOf(backend, opts.Instancetypes), Scheme: s,
			ControlPlane: true, Nodes: NodeSpecs, ControllersOff: opts.ControllersOff}
	}
	z := harness.Start(t, ho, "quorum", "primary", "dr")
	e := &Env{Zone: z, Scheme: s, controlPlane: opts.ControlPlane, Clusters: map[string]*harness.Cluster{
		Quorum: z.Clusters["quorum"], Primary: z.Clusters["primary"], DR: z.Clusters["dr"],
	}}
	for _, c := range e.Clusters {
		create(t, c.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}})
	}
	if opts.Latency {
		require.False(t, opts.MintedKubeconfigs, "a latency proxy is not put into minted kubeconfigs")
		e.startLatencyProxies(t)
	}
	for name, c := range e.Clusters {
		if name != Quorum {
			create(t, c.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: AppNS}})
			if opts.MintedKubeconfigs {
				continue // the chart creates the peer-auth namespace
			}
			// The workload chart's DRBD peer-auth namespace (drbd-peer-auth.yaml).
			create(t, c.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: srv1alpha1.PeerAuthNamespace(Namespace)}})
			create(t, e.Client(Quorum), &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name + "-kubeconfig"},
				Data:       map[string][]byte{srv1alpha1.KubeconfigSecretKey: e.quorumKubeconfig(t, name)},
			})
		}
	}
	if opts.MintedKubeconfigs {
		e.bootstrapZone(t, backend, opts.CompanionSecrets)
		e.createNodes(t)
		e.installChartRBAC(t)
		return e
	}
	create(t, e.Client(Quorum), &srv1alpha1.ProtectionZone{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: ZoneName},
		Spec: srv1alpha1.ProtectionZoneSpec{
			StorageBackend: backend,
			Clusters: []srv1alpha1.ZoneCluster{
				{Name: Primary, Role: srv1alpha1.ClusterRolePrimary, KubeconfigSecretRef: srv1alpha1.SecretKeyReference{Name: Primary + "-kubeconfig"},
					Client: srv1alpha1.ClientSettings{TimeoutSeconds: 2}},
				{Name: DR, Role: srv1alpha1.ClusterRoleDR, KubeconfigSecretRef: srv1alpha1.SecretKeyReference{Name: DR + "-kubeconfig"},
					Client: srv1alpha1.ClientSettings{TimeoutSeconds: 2}},
			},
			StorageMappings: []srv1alpha1.StorageMapping{{SourceStorageClass: "standard", TargetStorageClass: "standard"}},
		},
	})
	e.createNodes(t)
	e.installChartRBAC(t)
	return e
}

// Client returns the admin client of a cluster of the zone.
func (e *Env) Client(cluster string) client.Client { return e.Clusters[cluster].Client }

func create(t testing.TB, c client.Client, obj client.Object) {
	t.Helper()
	require.NoError(t, c.Create(context.Background(), obj))
}

// Eventually polls cond every 20ms until it returns nil or the deadline passes.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for {
		if last = cond(); last == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %v", timeout, what, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
