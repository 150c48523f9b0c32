package env

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/siterecovery/siterecovery/internal/boot"
)

// Annotations helm writes on every object of a release.
const (
	helmReleaseName      = "meta.helm.sh/release-name"
	helmReleaseNamespace = "meta.helm.sh/release-namespace"
)

// ServeInstalledWebhooks points the ValidatingWebhookConfigurations that the
// helm release (name, namespace) installed on a cluster at a server of this
// test process, https://localhost:<port><path>, instead of the chart's
// Service, which no pod backs here. Everything else stays as helm created it,
// the release's certificate Secret included. It returns the options of that
// server: self-managed certificates, whose CA the server injects into the
// configurations, as the charts' default.
func (e *Env) ServeInstalledWebhooks(t testing.TB, cluster, release, namespace string) boot.WebhookOptions {
	t.Helper()
	ctx := context.Background()
	c := e.Client(cluster)
	port := freePort(t)
	o := boot.WebhookOptions{
		Port: port, Host: "127.0.0.1", CertDir: t.TempDir(), CertManagement: boot.CertsSelf,
		SecretNamespace: namespace, DNSName: "localhost", RotatorName: fmt.Sprintf("webhook-certs-%d", rotators.Add(1)),
	}
	cfgs := &admissionregistrationv1.ValidatingWebhookConfigurationList{}
	require.NoError(t, c.List(ctx, cfgs))
	for i := range cfgs.Items {
		cfg := &cfgs.Items[i]
		if !ofRelease(cfg, release, namespace) {
			continue
		}
		for j := range cfg.Webhooks {
			svc := cfg.Webhooks[j].ClientConfig.Service
			require.NotNil(t, svc, "webhook %s of %s calls no Service", cfg.Webhooks[j].Name, cfg.Name)
			require.NotNil(t, svc.Path, "webhook %s of %s calls no path", cfg.Webhooks[j].Name, cfg.Name)
			url := fmt.Sprintf("https://localhost:%d%s", port, *svc.Path)
			cfg.Webhooks[j].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url}
		}
		require.NoError(t, c.Update(ctx, cfg), "pointing %s at this process", cfg.Name)
		o.Configurations = append(o.Configurations, cfg.Name)
	}
	require.NotEmpty(t, o.Configurations, "release %s/%s installed no webhook configuration on %s", namespace, release, cluster)
	secrets := &corev1.SecretList{}
	require.NoError(t, c.List(ctx, secrets, client.InNamespace(namespace)))
	for i := range secrets.Items {
		if s := &secrets.Items[i]; ofRelease(s, release, namespace) && strings.HasSuffix(s.Name, "-cert") {
			o.SecretName = s.Name
		}
	}
	require.NotEmpty(t, o.SecretName, "release %s/%s installed no certificate Secret on %s", namespace, release, cluster)
	return o
}

func ofRelease(obj client.Object, release, namespace string) bool {
	a := obj.GetAnnotations()
	return a[helmReleaseName] == release && a[helmReleaseNamespace] == namespace
}
