package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/siterecovery/siterecovery/test/alerts"
)

// metricsAddresses picks, with -prometheus, the address of each DR
// namespace's quorum-manager metrics on this machine; they stay secure
// (HTTPS, each scraper's token checked by the quorum API server), as the
// quorum chart serves them (metrics.secure: true). Without it, none serve.
func (sb *sandbox) metricsAddresses() error {
	if sb.o.prometheus == "" {
		return nil
	}
	sb.metrics = map[string]string{}
	for _, ns := range sb.drNamespaces() {
		addr, err := alerts.FreeAddr()
		if err != nil {
			return err
		}
		sb.metrics[ns] = addr
	}
	return nil
}

// startPrometheus runs the -prometheus binary: it scrapes each DR namespace's
// quorum-manager as the chart's ServiceMonitor would, with the token of a
// ServiceAccount that may get /metrics, and evaluates the rules the quorum
// chart renders for each DR namespace, with the chart's default durations.
func (sb *sandbox) startPrometheus(ctx context.Context) error {
	token, err := alerts.ScraperToken(ctx, kubernetes.NewForConfigOrDie(sb.zone.Clusters["quorum"].Config))
	if err != nil {
		return err
	}
	c := alerts.Config{Bin: sb.o.prometheus, Dir: filepath.Join(sb.o.workDir, "prometheus"), Listen: sb.o.prometheusAddr, Token: token,
		ScrapeInterval: 5 * time.Second, EvalInterval: 5 * time.Second}
	namespaces := make([]string, 0, len(sb.metrics))
	for ns := range sb.metrics {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	for _, ns := range namespaces {
		chart, err := alerts.Render(ns, nil)
		if err != nil {
			return fmt.Errorf("rendering the quorum chart's rules for %s: %w", ns, err)
		}
		c.Targets = append(c.Targets, alerts.Target{Address: sb.metrics[ns], Namespace: ns, Job: chart.Job})
		c.RuleFiles = append(c.RuleFiles, chart.Rules)
	}
	p, _, err := alerts.Start(ctx, c)
	if err != nil {
		return err
	}
	sb.procs = append(sb.procs, p)
	say("Prometheus: http://%s (alerts: /alerts, targets: /targets); it scrapes quorum-manager of %v every 5s", sb.o.prometheusAddr, namespaces)
	return nil
}
