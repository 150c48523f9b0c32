package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/chartrender"
	"github.com/siterecovery/siterecovery/test/harness"
)

// installWebhooks registers a chart's admission webhooks on the quorum cluster
// as the chart renders them for namespace, calling a process on this machine,
// and returns the flags that make that process serve them with a self-managed
// CA: quorum-manager's for the DR namespace (quorum-control-plane), and the
// cluster-wide ProtectionZone webhook (protectionzone). A user trying bad input
// in the sandbox meets the same refusals as on a real cluster.
func (sb *sandbox) installWebhooks(ctx context.Context, chart, namespace string) ([]string, error) {
	port, err := harness.FreePort()
	if err != nil {
		return nil, err
	}
	var values map[string]any
	if chart == "quorum-control-plane" {
		values = map[string]any{"protection": map[string]any{"allowedNamespaces": []any{protectableNamespace(namespace)}}}
	}
	objs, err := chartrender.RenderValues(chart, namespace, values)
	if err != nil {
		return nil, err
	}
	w, err := chartrender.LocalWebhooks(objs, port)
	if err != nil {
		return nil, err
	}
	q := sb.zone.Clusters["quorum"].Client
	if err := q.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	// The DR namespace's admission policy (the application namespaces it may
	// protect), evaluated by the API server itself.
	for _, obj := range chartrender.AdmissionPolicies(objs) {
		if err := q.Create(ctx, obj); err != nil {
			return nil, err
		}
	}
	var names []string
	for _, cfg := range w.Configurations {
		if err := q.Create(ctx, cfg); err != nil {
			return nil, err
		}
		names = append(names, cfg.Name)
	}
	if err := q.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: w.CertSecret}}); err != nil {
		return nil, err
	}
	return []string{
		fmt.Sprintf("--webhook-port=%d", port), "--webhook-cert-management=self",
		"--webhook-cert-secret=" + w.CertSecret, "--webhook-dns-name=localhost",
		"--webhook-cert-dir=" + filepath.Join(sb.o.workDir, chart+"-"+namespace+"-webhook-certs"),
		"--webhook-configurations=" + strings.Join(names, ","),
	}, nil
}

// installConfirmationPolicy creates the protectionzone chart's admission policy:
// the API server itself refuses an unplanned or forced failover that is not
// confirmed with the group's name.
func (sb *sandbox) installConfirmationPolicy(ctx context.Context) error {
	objs, err := chartrender.Render("protectionzone", zoneWebhookNamespace)
	if err != nil {
		return err
	}
	for _, obj := range chartrender.AdmissionPolicies(objs) {
		// installWebhooks of the protectionzone chart creates them too.
		if err := sb.zone.Clusters["quorum"].Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// waitWebhooks waits until quorum-manager's webhooks and the zone webhook
// answer: a dry-run request for a group that does not exist, and a zone whose
// Secret does not exist, are refused by the webhooks, not by a TLS or
// connection error.
func (sb *sandbox) waitWebhooks(ctx context.Context) error {
	q := sb.zone.Clusters["quorum"].Client
	probe := &srv1alpha1.FailoverRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: drNamespace, Name: "webhook-probe"},
		Spec: srv1alpha1.FailoverRequestSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: "no-such-group"},
			TargetCluster: dr, FailoverType: srv1alpha1.FailoverPlanned, DrainTimeoutSeconds: 60, BatchBootTimeoutSeconds: 60},
	}
	zone := chartrender.ZoneWebhookProbe(drNamespace)
	probes := []client.Object{probe, zone}
	if sb.vs != nil {
		vs := probe.DeepCopy()
		vs.Namespace = vsNamespace
		probes = append(probes, vs)
	}
	for _, obj := range probes {
		err := poll(ctx, time.Minute, func() (bool, error) {
			err := q.Create(ctx, obj.DeepCopyObject().(client.Object), client.DryRunAll)
			if err == nil {
				return false, fmt.Errorf("the webhook probe %T was admitted: its webhook is not registered", obj)
			}
			return strings.Contains(err.Error(), "does not exist in namespace"), nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
