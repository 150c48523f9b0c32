package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// Conventional cluster names.
const (
	Quorum  = "quorum"
	Primary = "primary"
	DR      = "dr"
)

// Options configure the clusters of a Zone.
type Options struct {
	// CRDDirectoryPaths are directories (or files) of CRD YAML installed into every
	// cluster. nil means DefaultCRDPaths(); a non-nil empty slice installs no CRDs. Listed
	// paths must exist.
	CRDDirectoryPaths []string
	// ClusterCRDPaths, when it returns a non-nil slice for a cluster, names
	// the CRD directories or files that cluster gets instead: each CRD costs
	// kube-apiserver CPU at start (the large KubeVirt and VolSync schemas a
	// few seconds together), so a zone installs only what each cluster serves
	// in production.
	ClusterCRDPaths func(cluster string) []string
	// Scheme is used by every Cluster.Client. nil means a scheme with the client-go
	// built-in types and apiextensions/v1.
	Scheme *runtime.Scheme
	// APIServerFlags are extra kube-apiserver flags (name without dashes to
	// value) for every cluster, e.g. an OIDC issuer to trust.
	APIServerFlags map[string]string
	// ControlPlane runs kube-controller-manager, kube-scheduler and kwok nodes
	// beside each API server, with every admission plugin a kubeadm cluster
	// enables (see admission.go). Without it a cluster is a bare API server.
	ControlPlane bool
	// Scheduler runs kube-scheduler (alone) beside each bare API server, for
	// tests whose pods must be placed on the nodes they create, which then
	// need allocatable capacity. Implied by ControlPlane.
	Scheduler bool
	// Nodes returns the nodes kwok plays in a cluster of a ControlPlane zone;
	// nil means DefaultNodes.
	Nodes func(cluster string) []NodeSpec
	// ControllersOff are kube-controller-manager's controllers a
	// ControlPlane zone runs without ("job-controller"), for a test that
	// plays one's part itself; the caller says why where it sets them.
	ControllersOff []string
}

// Zone is a set of named clusters started together.
type Zone struct {
	// Clusters by the names they were started with.
	Clusters map[string]*Cluster
	// Dir holds one sub-directory per cluster (see Cluster.Dir).
	Dir string

	keepDir  atomic.Bool
	stopOnce sync.Once
	stopErr  error
}

// startTimeout bounds Start; starting three clusters normally takes a few seconds.
const startTimeout = 3 * time.Minute

// Start starts the named clusters in parallel and registers their shutdown with
// t.Cleanup (which also runs when the test fails or panics). It fails the test if a
// cluster does not start. If the test failed, the zone's directory with the process
// logs is kept and its path logged.
func Start(t testing.TB, opts Options, names ...string) *Zone {
	t.Helper()
	RequireAPIServers(t)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	began := time.Now()
	z, err := StartE(ctx, opts, names...)
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	t.Logf("harness: started %v in %s (logs under %s)", names, time.Since(began).Round(time.Millisecond), z.Dir)
	t.Cleanup(func() {
		if t.Failed() {
			z.keepDir.Store(true)
			t.Logf("harness: keeping %s (kube-apiserver.log and etcd.log per cluster)", z.Dir)
		}
		if err := z.Stop(); err != nil {
			t.Errorf("harness: %v", err)
		}
	})
	return z
}

// RequireAPIServers skips t in the unit tier (go test -short): it is the one place
// that decides which tests start kube-apiserver and etcd, so `make test-unit` runs
// without them and a test cannot forget the check. StartE refuses to start a zone
// under -short, so a test that bypasses Start fails instead of slowing the tier.
func RequireAPIServers(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs kube-apiserver and etcd; the unit tier (-short) runs none")
	}
}

var validName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// StartE starts the named clusters in parallel and returns when all of them answer
// /readyz with the CRDs installed. The caller must call Zone.Stop. On error nothing is
// left running; the zone's directory with the process logs is kept and named in the error.
func StartE(ctx context.Context, opts Options, names ...string) (*Zone, error) {
	if len(names) == 0 {
		return nil, errors.New("no cluster names given")
	}
	seen := map[string]bool{}
	for _, n := range names {
		if !validName.MatchString(n) || seen[n] {
			return nil, fmt.Errorf("cluster names must be unique DNS labels, got %q", names)
		}
		seen[n] = true
	}
	if testing.Testing() && testing.Short() {
		return nil, errors.New("the unit tier (-short) starts no API server: call harness.Start, which skips, or harness.RequireAPIServers first")
	}
	binDir, err := BinaryDir()
	if err != nil {
		return nil, err
	}
	if opts.ControlPlane || opts.Scheduler {
		if err := ControlPlaneBinaries(binDir); err != nil {
			return nil, err
		}
	}
	if opts.ControlPlane {
		if _, err := KwokDir(); err != nil {
			return nil, err
		}
	}
	crds, err := readCRDs(opts.CRDDirectoryPaths)
	if err != nil {
		return nil, err
	}
	crdsOf := map[string][]*apiextensionsv1.CustomResourceDefinition{}
	for _, name := range names {
		crdsOf[name] = crds
		if opts.ClusterCRDPaths == nil {
			continue
		}
		if paths := opts.ClusterCRDPaths(name); paths != nil {
			if crdsOf[name], err = readCRDs(paths); err != nil {
				return nil, err
			}
		}
	}
	scheme := opts.Scheme
	if scheme == nil {
		if scheme, err = defaultScheme(); err != nil {
			return nil, err
		}
	}
	reapAbandonedZones()
	dir, err := os.MkdirTemp("", zoneDirPattern)
	if err != nil {
		return nil, err
	}
	if err := writeOwner(dir); err != nil {
		return nil, err
	}
	z := &Zone{Clusters: make(map[string]*Cluster, len(names)), Dir: dir}
	track(z) // Stop forgets it again

	clusters := make([]*Cluster, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			template := etcdTemplate(ctx, binDir, crdsOf[name], scheme)
			clusters[i], errs[i] = startCluster(ctx, name, binDir, filepath.Join(dir, name), copyCRDs(crdsOf[name]), scheme, opts, template)
		})
	}
	wg.Wait()
	for i, c := range clusters {
		if c != nil {
			z.Clusters[names[i]] = c
		}
	}
	if err := errors.Join(errs...); err != nil {
		z.keepDir.Store(true)
		_ = z.Stop()
		return nil, fmt.Errorf("%w\n(zone directory kept: %s)", err, dir)
	}
	if err := ctx.Err(); err != nil {
		_ = z.Stop()
		return nil, err
	}
	return z, nil
}

// Stop stops every cluster of the zone in parallel (kube-apiserver, then etcd) and removes
// the zone's directory (after a failure only the process logs are kept). It is idempotent and safe to call from several goroutines.
func (z *Zone) Stop() error {
	z.stopOnce.Do(func() {
		var wg sync.WaitGroup
		errs := make(chan error, len(z.Clusters))
		for _, c := range z.Clusters {
			wg.Go(func() { errs <- c.stop() })
		}
		wg.Wait()
		close(errs)
		var all []error
		for err := range errs {
			all = append(all, err)
		}
		if errors.Join(all...) != nil {
			z.keepDir.Store(true)
		}
		if z.keepDir.Load() {
			// Keep the logs only: the etcd data directory alone preallocates 64 MB.
			all = append(all, os.Remove(filepath.Join(z.Dir, ownerFile)))
			entries, _ := os.ReadDir(z.Dir) // also clusters that failed to start
			for _, e := range entries {
				if !e.IsDir() {
					continue // a log the test put beside the clusters
				}
				all = append(all, os.RemoveAll(filepath.Join(z.Dir, e.Name(), etcdDataDir)),
					os.RemoveAll(filepath.Join(z.Dir, e.Name(), certDir)))
			}
		} else {
			all = append(all, os.RemoveAll(z.Dir))
		}
		z.stopErr = errors.Join(all...)
		forget(z)
	})
	return z.stopErr
}

func defaultScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}
