package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Sub-directories of Cluster.Dir.
const (
	certDir     = "certs"
	etcdDataDir = "etcd-data"
)

const (
	processStartTimeout = 60 * time.Second
	// kube-apiserver drains its requests on SIGTERM; on a loaded 2-core machine
	// that can take longer than envtest's 20 s default.
	processStopTimeout = 90 * time.Second
)

// Cluster is one control plane (etcd + kube-apiserver) of a Zone.
type Cluster struct {
	// Name is the name the cluster was started with, e.g. "primary".
	Name string
	// Config is an admin (system:masters) client configuration with an embedded client
	// certificate.
	Config *rest.Config
	// Client is a controller-runtime client for Config using Options.Scheme.
	Client client.Client
	// Kubeconfig is a self-contained kubeconfig for the same admin identity (client
	// certificate and CA embedded, no exec or auth-provider plugins) with one context
	// named after the cluster. It can be stored in a Secret and used from another process.
	Kubeconfig []byte
	// Dir holds the cluster's certificates, etcd data and the process logs
	// kube-apiserver.log and etcd.log. It is removed when the zone stops; if the test or a
	// start failed, the logs are kept.
	Dir string

	env   *envtest.Environment
	logs  []*os.File
	plane *controlPlane // nil for a bare API server

	mu      sync.Mutex // serialises StopAPIServer, StartAPIServer and stop
	apiDown bool
	stopped bool
}

// APIServerLog is the path of the file kube-apiserver writes its output to.
func (c *Cluster) APIServerLog() string { return filepath.Join(c.Dir, "kube-apiserver.log") }

// EtcdLog is the path of the file etcd writes its output to.
func (c *Cluster) EtcdLog() string { return filepath.Join(c.Dir, "etcd.log") }

// startCluster starts etcd and kube-apiserver for one cluster under dir, installs crds
// (which it takes ownership of) and waits until /readyz answers. With a
// template (etcdTemplate) etcd starts on a copy of it, which holds crds and
// their policies already.
func startCluster(ctx context.Context, name, binDir, dir string, crds []*apiextensionsv1.CustomResourceDefinition, scheme *runtime.Scheme, opts Options, template string) (*Cluster, error) {
	c := &Cluster{Name: name, Dir: dir}
	certPath, dataPath := filepath.Join(dir, certDir), filepath.Join(dir, etcdDataDir)
	if err := os.MkdirAll(certPath, 0o700); err != nil {
		return nil, fmt.Errorf("cluster %q: %w", name, err)
	}
	if template == "" {
		if err := os.MkdirAll(dataPath, 0o700); err != nil {
			return nil, fmt.Errorf("cluster %q: %w", name, err)
		}
	} else if err := os.CopyFS(dataPath, os.DirFS(template)); err != nil {
		return nil, fmt.Errorf("cluster %q: copying the etcd template: %w", name, err)
	}
	apiLog, err := c.openLog(c.APIServerLog())
	if err != nil {
		return nil, err
	}
	etcdLog, err := c.openLog(c.EtcdLog())
	if err != nil {
		c.closeLogs()
		return nil, err
	}

	// An explicit CertDir keeps the serving certificate (and its CA, which clients and
	// kubeconfigs trust) across StopAPIServer/StartAPIServer: envtest deletes and
	// regenerates certificates only in a directory it created itself.
	api := &envtest.APIServer{
		Path:    filepath.Join(binDir, "kube-apiserver"),
		CertDir: certPath,
		Out:     apiLog,
		Err:     apiLog,
	}
	if err := configureAdmission(api.Configure(), dir, opts.ControlPlane); err != nil {
		c.closeLogs()
		return nil, fmt.Errorf("cluster %q: %w", name, err)
	}
	configureAPIServer(api.Configure())
	if err := configureAggregation(api.Configure(), certPath); err != nil {
		c.closeLogs()
		return nil, fmt.Errorf("cluster %q: %w", name, err)
	}
	for k, v := range opts.APIServerFlags {
		api.Configure().Set(k, v)
	}
	c.serveDebugSocket(api.Configure())
	etcd := &envtest.Etcd{
		Path:    filepath.Join(binDir, "etcd"),
		DataDir: dataPath,
		Out:     etcdLog,
		Err:     etcdLog,
	}
	configureEtcd(etcd.Configure())
	serverGC()
	c.env = &envtest.Environment{
		ControlPlane:             envtest.ControlPlane{APIServer: api, Etcd: etcd},
		Scheme:                   scheme,
		BinaryAssetsDirectory:    binDir,
		ControlPlaneStartTimeout: processStartTimeout,
		ControlPlaneStopTimeout:  processStopTimeout,
	}
	cfg, err := c.env.Start()
	if err != nil {
		// envtest may fail after the processes are up (e.g. while installing CRDs).
		_ = c.env.Stop()
		c.closeLogs()
		return nil, c.failure("start", err)
	}
	install := installCRDs
	if template != "" {
		install = waitTemplateCRDs
	}
	if err := install(ctx, cfg, crds); err != nil {
		_ = c.env.Stop()
		c.closeLogs()
		return nil, c.failure("install CRDs", err)
	}
	if err := waitReady(ctx, cfg); err != nil {
		_ = c.env.Stop()
		c.closeLogs()
		return nil, c.failure("start", err)
	}
	// client-go's defaults (5 QPS, burst 10) would make every test measure its
	// own throttling; the API servers here serve one test each.
	cfg.QPS, cfg.Burst = 1000, 2000
	c.Config = cfg
	if c.Kubeconfig, err = kubeconfigFor(name, cfg); err != nil {
		_ = c.stop()
		return nil, c.failure("start", err)
	}
	if c.Client, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		_ = c.stop()
		return nil, c.failure("start", err)
	}
	if opts.ControlPlane || opts.Scheduler {
		nodes := DefaultNodes
		if opts.Nodes != nil {
			nodes = opts.Nodes
		}
		if err := c.startControlPlane(ctx, binDir, nodes(name), !opts.ControlPlane, opts.ControllersOff); err != nil {
			_ = c.stop()
			return nil, c.failure("start the control plane", err)
		}
	}
	return c, nil
}

// configureAPIServer trims kube-apiserver to what the controllers under test use. envtest
// already sets certificates, ports, RBAC authorization and the service account issuer.
func configureAPIServer(args *envtest.Arguments) {
	// API priority and fairness creates its bootstrap configuration at start and adds
	// per-request bookkeeping; plain max-in-flight limits are enough for tests.
	args.Set("enable-priority-and-fairness", "false")
}

// configureEtcd drops etcd's fsync: a zone's data lives for one test, and on a
// shared CI disk every fsync of three etcds would be measured as controller latency.
func configureEtcd(args *envtest.Arguments) {
	args.Set("unsafe-no-fsync", "true")
}

// The API servers and etcds a zone starts collect garbage only when their heap
// reaches serverMemoryLimit (GOGC off, GOMEMLIMIT set; the processes inherit
// both). With Go's default pacing kube-apiserver spent a fifth of its CPU in
// garbage collection under a burst of writes, and a collection that fell into
// a benchmark's measured window doubled the API server's CPU time in it. A
// zone's six processes then hold at most 6 GiB; the test machines have memory
// to spare and two cores shared by three control planes and every controller.
const serverMemoryLimit = "1GiB"

var serverGCOnce sync.Once

func serverGC() {
	serverGCOnce.Do(func() {
		_, gogc := os.LookupEnv("GOGC")
		_, limit := os.LookupEnv("GOMEMLIMIT")
		if !gogc && !limit {
			_ = os.Setenv("GOGC", "off")
			_ = os.Setenv("GOMEMLIMIT", serverMemoryLimit)
		}
	})
}

// StopAPIServer kills the cluster's kube-apiserver process (a site outage as seen by
// clients: connections drop, then are refused); etcd keeps running with all data. It is a no-op if
// the API server is already stopped.
func (c *Cluster) StopAPIServer() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return fmt.Errorf("cluster %q: zone is stopped", c.Name)
	}
	if c.apiDown {
		return nil
	}
	if err := c.killAPIServer(); err != nil {
		return c.failure("stop kube-apiserver", err)
	}
	// envtest notes the exit just after the process is reaped; until then its
	// Stop would signal a process group that no longer exists.
	deadline := time.Now().Add(processStopTimeout)
	for err := c.env.ControlPlane.APIServer.Stop(); err != nil; err = c.env.ControlPlane.APIServer.Stop() {
		if time.Now().After(deadline) {
			return c.failure("stop kube-apiserver", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.apiDown = true
	return nil
}

// StartAPIServer starts the kube-apiserver stopped by StopAPIServer again, on the same
// address and port, with the same certificates and the same etcd, so existing clients
// and kubeconfigs keep working. It returns when /readyz answers. It is a no-op if the API
// server is running.
func (c *Cluster) StartAPIServer() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return fmt.Errorf("cluster %q: zone is stopped", c.Name)
	}
	if !c.apiDown {
		return nil
	}
	api := c.env.ControlPlane.APIServer
	before := api.HostPort()
	if err := api.Start(); err != nil {
		_ = api.Stop()
		return c.failure("restart kube-apiserver", err)
	}
	if after := api.HostPort(); after != before {
		return c.failure("restart kube-apiserver", fmt.Errorf("came back on %s instead of %s", after, before))
	}
	c.apiDown = false
	ctx, cancel := context.WithTimeout(context.Background(), processStartTimeout)
	defer cancel()
	if err := waitReady(ctx, c.Config); err != nil {
		return c.failure("restart kube-apiserver", err)
	}
	return nil
}

// stop stops kube-apiserver and etcd and closes the logs. It is idempotent.
func (c *Cluster) stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil
	}
	c.stopped = true
	c.plane.stop()
	err := c.env.Stop()
	c.closeLogs()
	if err != nil {
		return fmt.Errorf("cluster %q: stop: %w", c.Name, err)
	}
	return nil
}

func (c *Cluster) openLog(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("cluster %q: %w", c.Name, err)
	}
	c.logs = append(c.logs, f)
	return f, nil
}

func (c *Cluster) closeLogs() {
	for _, f := range c.logs {
		_ = f.Close()
	}
	c.logs = nil
}

// failure wraps err with where the process output went and the last lines of it.
func (c *Cluster) failure(what string, err error) error {
	return fmt.Errorf("cluster %q: %s: %w\n  kube-apiserver output: %s\n  etcd output: %s\n  last lines of kube-apiserver output:\n%s",
		c.Name, what, err, c.APIServerLog(), c.EtcdLog(), tail(c.APIServerLog(), 15))
}

// tail returns the last n lines of the file at path, indented, or a note why it cannot.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "    (" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + strings.Join(lines, "\n    ")
}

// kubeconfigFor renders cfg as a self-contained kubeconfig with one context named name.
func kubeconfigFor(name string, cfg *rest.Config) ([]byte, error) {
	if len(cfg.CertData) == 0 && cfg.BearerToken == "" {
		return nil, errors.New("admin config has neither an embedded client certificate nor a token")
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
	}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
		Token:                 cfg.BearerToken,
	}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	return clientcmd.Write(*kc)
}
