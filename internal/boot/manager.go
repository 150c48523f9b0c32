// Package boot owns what the binaries of every tier share at start-up:
// command-line flags for metrics, probes, leader election and logging, and the
// construction and running of a controller-runtime manager from them. It knows
// no controller; each tier's setup package registers its own, so a binary links
// only the tier it runs.
package boot

import (
	"flag"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/siterecovery/siterecovery/internal/scheme"
)

// Options are the flags every siterecovery binary accepts.
type Options struct {
	// MetricsAddr is where Prometheus metrics are served ("0" disables them).
	MetricsAddr string
	// MetricsSecure serves metrics over HTTPS to clients whose bearer token the
	// API server accepts (TokenReview) and that may get the /metrics URL
	// (SubjectAccessReview), instead of plain HTTP to anyone.
	MetricsSecure bool
	// MetricsCertDir holds the metrics serving certificate (tls.crt, tls.key);
	// empty makes MetricsSecure serve a self-signed one.
	MetricsCertDir string
	// ProbeAddr is where /healthz and /readyz are served.
	ProbeAddr string
	// LeaderElect makes only one replica reconcile at a time.
	LeaderElect bool
	// LeaderElectionID names the Lease used for leader election.
	LeaderElectionID string
	// LeaderElectionNamespace is where that Lease lives.
	LeaderElectionNamespace string
	// Namespace restricts the cache to one namespace when set.
	Namespace string
	// CacheByObject tunes the cache per kind (a binary's own transforms or
	// selectors); the binary sets it, not a flag.
	CacheByObject map[client.Object]cache.ByObject
	// QPS and Burst bound the manager's requests to its API server; client-go's
	// defaults (5/10) would throttle a 20-VM failover to seconds.
	QPS   float64
	Burst int
	// Webhook configures the admission webhook server; its Port 0 serves none.
	Webhook WebhookOptions
	// Zap configures logging.
	Zap zap.Options
}

// BindFlags registers the shared flags on fs with the binary's defaults.
func (o *Options) BindFlags(fs *flag.FlagSet, leaderElectionID string) {
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8080", "address the metrics endpoint binds to; 0 disables it")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", false, "serve metrics over HTTPS, only to callers the API server authenticates and authorizes for GET /metrics")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", "", "directory of the metrics serving certificate (tls.crt, tls.key); empty serves a self-signed one")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", "address the health and readiness probes bind to")
	fs.BoolVar(&o.LeaderElect, "leader-elect", false, "enable leader election so that only one replica reconciles")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", leaderElectionID, "name of the leader election Lease")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election Lease (defaults to the pod's namespace)")
	fs.Float64Var(&o.QPS, "kube-api-qps", 50, "sustained requests per second to the API server")
	fs.IntVar(&o.Burst, "kube-api-burst", 100, "request burst to the API server")
	o.Webhook.BindFlags(fs)
	o.Zap.BindFlags(fs)
}

// webhookOptions completes the webhook options from the rest: the certificate
// Secret lives in the binary's namespace unless a flag says otherwise.
func (o Options) webhookOptions() WebhookOptions {
	w := o.Webhook
	if w.SecretNamespace == "" {
		w.SecretNamespace = o.Namespace
	}
	if w.SecretNamespace == "" {
		w.SecretNamespace = os.Getenv("POD_NAMESPACE")
	}
	return w
}

// CacheOptions is the cache of every siterecovery manager: scoped to namespace
// when it is set, and without managedFields, which no reader uses (cached
// objects, and the copies every List makes, are then about half the size).
func CacheOptions(namespace string) cache.Options {
	o := cache.Options{DefaultTransform: cache.TransformStripManagedFields()}
	if namespace != "" {
		o.DefaultNamespaces = map[string]cache.Config{namespace: {}}
	}
	return o
}

func (o Options) cacheOptions() cache.Options {
	c := CacheOptions(o.Namespace)
	c.ByObject = o.CacheByObject
	return c
}

// NewManager builds a manager with the shared scheme, metrics, probes and leader
// election configured from o. The caller registers its reconcilers and starts it.
func NewManager(o Options) (ctrl.Manager, error) {
	return NewManagerWithScheme(o, scheme.New())
}

// NewManagerWithScheme is NewManager with a caller-provided scheme.
func NewManagerWithScheme(o Options, s *runtime.Scheme) (ctrl.Manager, error) {
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&o.Zap)))
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	if o.QPS > 0 {
		cfg.QPS, cfg.Burst = float32(o.QPS), o.Burst
	}
	leaseNamespace := o.LeaderElectionNamespace
	if leaseNamespace == "" {
		leaseNamespace = o.Namespace
	}
	renew := 10 * time.Second
	mgrOpts := ctrl.Options{
		Scheme:                  s,
		Metrics:                 o.metricsOptions(),
		HealthProbeBindAddress:  o.ProbeAddr,
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        o.LeaderElectionID,
		LeaderElectionNamespace: leaseNamespace,
		// Release the lease on a clean stop so that a successor does not wait a
		// whole lease duration before resuming flows.
		LeaderElectionReleaseOnCancel: true,
		RenewDeadline:                 &renew,
		Cache:                         o.cacheOptions(),
		MapperProvider:                NewRESTMapper,
		WebhookServer:                 o.webhookOptions().Server(),
	}
	mgr, err := ctrl.NewManager(cfg, mgrOpts)
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, err
	}
	return mgr, nil
}
