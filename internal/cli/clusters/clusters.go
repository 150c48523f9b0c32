package clusters

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/kubeconfig"
)

// ErrSecretForbidden means the user may not read the cluster's kubeconfig Secret.
var ErrSecretForbidden = kubeconfig.ErrSecretForbidden

// Cluster is one workload cluster of a zone, as the CLI reaches it.
type Cluster struct {
	Zone   string
	Name   string
	Role   srv1alpha1.ClusterRole
	Secret string
	// Config and Client are set when the Secret was read and parsed.
	Config *rest.Config
	Client client.Client
	// Err says why there is no client: ErrSecretForbidden, a missing Secret,
	// or a kubeconfig kubeconfig.RESTConfig refuses. It never holds Secret data.
	Err error
}

// Usable reports whether the CLI has a client of the cluster.
func (c *Cluster) Usable() bool { return c.Client != nil }

// Timeout bounds each request to a workload cluster.
const Timeout = 10 * time.Second

// Connect returns a Cluster for each cluster of the zone, in spec order.
func Connect(ctx context.Context, quorum client.Client, s *runtime.Scheme, z *srv1alpha1.ProtectionZone) []*Cluster {
	out := make([]*Cluster, 0, len(z.Spec.Clusters))
	for _, zc := range z.Spec.Clusters {
		c := &Cluster{Zone: z.Name, Name: zc.Name, Role: zc.Role, Secret: zc.KubeconfigSecretRef.Name}
		c.Config, c.Err = restConfig(ctx, quorum, z.Namespace, zc)
		if c.Err == nil {
			c.Client, c.Err = client.New(c.Config, client.Options{Scheme: s})
		}
		out = append(out, c)
	}
	return out
}

func restConfig(ctx context.Context, quorum client.Client, ns string, zc srv1alpha1.ZoneCluster) (*rest.Config, error) {
	cfg, err := kubeconfig.FromSecret(ctx, quorum, ns, zc.KubeconfigSecretRef, kubeconfig.Limits{QPS: 100, Burst: 200, Timeout: Timeout})
	if err != nil {
		return nil, err
	}
	// validate asks one access review per verb and resource: a burst of ~200.
	cfg.UserAgent = "kubectl-siterecovery"
	return cfg, nil
}

// Probe is one answer of an API server to GET /version.
type Probe struct {
	Version string
	Latency time.Duration
	// Date is the server's Date header; zero when it sent none.
	Date time.Time
	// Sent and Received bound when the server wrote Date.
	Sent, Received time.Time
}

// ProbeServer asks cfg's API server for its version. Its error names the
// server, never a credential.
func ProbeServer(ctx context.Context, cfg *rest.Config) (Probe, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return Probe{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+"/version", http.NoBody)
	if err != nil {
		return Probe{}, err
	}
	p := Probe{Sent: time.Now()}
	resp, err := hc.Do(req)
	if err != nil {
		return Probe{}, fmt.Errorf("API server %s does not answer: %w", cfg.Host, unwrapURL(err))
	}
	defer resp.Body.Close()
	p.Received = time.Now()
	p.Latency = p.Received.Sub(p.Sent)
	if d, err := http.ParseTime(resp.Header.Get("Date")); err == nil {
		p.Date = d
	}
	if resp.StatusCode != http.StatusOK {
		return p, fmt.Errorf("API server %s answered %s", cfg.Host, resp.Status)
	}
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := decodeJSON(resp, &v); err != nil {
		return p, err
	}
	p.Version = v.GitVersion
	return p, nil
}
