package alerts

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/siterecovery/siterecovery/test/harness"
	"github.com/siterecovery/siterecovery/test/process"
)

// BuildPrometheus runs hack/prometheus.sh, which builds cmds
// ("promtool", "prometheus"; both when none) from the module proxy when they
// are not cached yet, and returns the folder that holds them.
func BuildPrometheus(cmds ...string) (string, error) {
	cmd := exec.Command(filepath.Join(harness.RepoRoot(), "hack", "prometheus.sh"), cmds...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("building %v with hack/prometheus.sh: %w", cmds, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Target is a quorum-manager metrics endpoint, scraped as the chart's
// ServiceMonitor has Prometheus Operator scrape it (servicemonitor.yaml): over
// HTTPS without verifying the self-signed certificate, with a bearer token the
// endpoint has the API server review.
type Target struct {
	// Address is the endpoint's host:port.
	Address string
	// Namespace and Job are the labels Prometheus Operator gives the series:
	// the release's namespace and the metrics Service's name (Chart.Job).
	Namespace, Job string
}

// Config is a Prometheus for the sandbox or a test.
type Config struct {
	// Bin is the prometheus binary (BuildPrometheus).
	Bin string
	// Dir holds its configuration, rules, token and database; Name names
	// its log there.
	Dir string
	// Listen is the address of its HTTP API, host:port.
	Listen  string
	Targets []Target
	// RuleFiles are rules files (Chart.Rules), one per release: two
	// releases' rule groups have the same names.
	RuleFiles [][]byte
	// Token is the scrapers' bearer token; it is written to a file of mode
	// 0600 in Dir, never logged.
	Token string
	// ScrapeInterval and EvalInterval default to the chart's 30s scrape
	// interval and Prometheus's 1m evaluation interval.
	ScrapeInterval, EvalInterval time.Duration
}

// Start writes the configuration and starts Prometheus; it returns once its
// API answers. Stop the returned process when done.
func Start(ctx context.Context, c Config) (*process.Process, API, error) {
	if c.ScrapeInterval == 0 {
		c.ScrapeInterval = 30 * time.Second
	}
	if c.EvalInterval == 0 {
		c.EvalInterval = time.Minute
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return nil, API{}, err
	}
	cfg, err := c.config()
	if err != nil {
		return nil, API{}, err
	}
	files := map[string][]byte{"prometheus.yml": cfg, "token": []byte(c.Token)}
	for i, r := range c.RuleFiles {
		files[fmt.Sprintf("rules-%d.yaml", i)] = r
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(c.Dir, name), data, 0o600); err != nil {
			return nil, API{}, err
		}
	}
	p := &process.Process{Name: "prometheus", Bin: c.Bin, Args: []string{
		"--config.file=" + filepath.Join(c.Dir, "prometheus.yml"),
		"--storage.tsdb.path=" + filepath.Join(c.Dir, "data"),
		"--web.listen-address=" + c.Listen,
		"--log.level=warn",
	}}
	if err := p.Start(c.Dir); err != nil {
		return nil, API{}, err
	}
	api := API{URL: "http://" + c.Listen}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if how, done := p.Exited(); done {
			return false, fmt.Errorf("prometheus exited (%s); see %s", how, p.LogPath())
		}
		return api.ready(ctx), nil
	})
	if err != nil {
		p.Stop()
		return nil, API{}, fmt.Errorf("waiting for prometheus to be ready: %w", err)
	}
	return p, api, nil
}

// config is prometheus.yml: one scrape job per metrics Service, named as the
// Service (the job label Prometheus Operator gives its series), its targets
// labelled with the release's namespace.
func (c Config) config() ([]byte, error) {
	if len(c.Targets) == 0 {
		return nil, errors.New("no target to scrape")
	}
	type staticConfig struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels"`
	}
	var jobs []map[string]any
	byJob := map[string]int{}
	for _, t := range c.Targets {
		i, ok := byJob[t.Job]
		if !ok {
			i = len(jobs)
			byJob[t.Job] = i
			jobs = append(jobs, map[string]any{
				"job_name": t.Job, "scheme": "https",
				"authorization": map[string]any{"credentials_file": filepath.Join(c.Dir, "token")},
				// As the chart's ServiceMonitor: the endpoint's certificate
				// is self-signed, the token is what it checks.
				"tls_config":     map[string]any{"insecure_skip_verify": true},
				"static_configs": []staticConfig{},
			})
		}
		jobs[i]["static_configs"] = append(jobs[i]["static_configs"].([]staticConfig),
			staticConfig{Targets: []string{t.Address}, Labels: map[string]string{"namespace": t.Namespace}})
	}
	return yaml.Marshal(map[string]any{
		"global": map[string]any{
			"scrape_interval":     c.ScrapeInterval.String(),
			"evaluation_interval": c.EvalInterval.String(),
		},
		"rule_files":     []string{filepath.Join(c.Dir, "rules-*.yaml")},
		"scrape_configs": jobs,
	})
}

// FreeAddr returns a free 127.0.0.1:port.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// API is Prometheus's HTTP API.
type API struct{ URL string }

func (a API) ready(ctx context.Context) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.URL+"/-/ready", http.NoBody)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
