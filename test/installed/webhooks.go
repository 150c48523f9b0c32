package installed

import (
	"context"
	"fmt"
	"strconv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/siterecovery/siterecovery/test/harness"
)

// Annotations helm writes on every object of a release.
const (
	helmReleaseName      = "meta.helm.sh/release-name"
	helmReleaseNamespace = "meta.helm.sh/release-namespace"
)

// Webhooks is where a process of this machine serves a release's webhooks.
type Webhooks struct {
	Port    int
	CertDir string
	// Configurations are the release's ValidatingWebhookConfigurations.
	Configurations []string
}

// Flags replace the webhook flags of the pod's container that name its own
// port, folder and DNS name: it serves on Port with a certificate for
// localhost, the name the API server dials.
func (w Webhooks) Flags() map[string]string {
	return map[string]string{"--webhook-port": strconv.Itoa(w.Port), "--webhook-cert-dir": w.CertDir, "--webhook-dns-name": "localhost"}
}

// ServeWebhooks points the ValidatingWebhookConfigurations that the helm
// release (name, namespace) installed on a cluster at a server of this
// machine, https://localhost:<port><path>, instead of the chart's Service,
// which no pod backs here. Everything else stays as helm created it, the
// release's certificate Secret included: the process manages its
// certificates itself, the charts' default, and injects the CA. certDir is
// the process's certificate folder.
func ServeWebhooks(ctx context.Context, c client.Client, release, namespace, certDir string) (Webhooks, error) {
	port, err := harness.FreePort()
	if err != nil {
		return Webhooks{}, err
	}
	w := Webhooks{Port: port, CertDir: certDir}
	cfgs := &admissionregistrationv1.ValidatingWebhookConfigurationList{}
	if err := c.List(ctx, cfgs); err != nil {
		return w, err
	}
	for i := range cfgs.Items {
		cfg := &cfgs.Items[i]
		if a := cfg.GetAnnotations(); a[helmReleaseName] != release || a[helmReleaseNamespace] != namespace {
			continue
		}
		for j := range cfg.Webhooks {
			svc := cfg.Webhooks[j].ClientConfig.Service
			if svc == nil || svc.Path == nil {
				return w, fmt.Errorf("webhook %s of %s calls no Service path", cfg.Webhooks[j].Name, cfg.Name)
			}
			url := fmt.Sprintf("https://localhost:%d%s", port, *svc.Path)
			cfg.Webhooks[j].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url}
		}
		if err := c.Update(ctx, cfg); err != nil {
			return w, fmt.Errorf("pointing %s at this machine: %w", cfg.Name, err)
		}
		w.Configurations = append(w.Configurations, cfg.Name)
	}
	if len(w.Configurations) == 0 {
		return w, fmt.Errorf("release %s/%s installed no webhook configuration", namespace, release)
	}
	return w, nil
}
