package boot

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// Certificate management modes of the webhook server.
const (
	// CertsSelf: the binary creates and rotates its own CA and serving
	// certificate in a Secret and writes the CA into its webhook configurations.
	CertsSelf = "self"
	// CertsExternal: the serving certificate is mounted from a Secret that
	// cert-manager (or the operator) maintains, and cert-manager's CA injector
	// fills the webhook configurations' caBundle.
	CertsExternal = "external"
)

// WebhookOptions configure a binary's admission webhook server. Port 0 serves no
// webhooks.
type WebhookOptions struct {
	Port    int
	Host    string
	CertDir string
	// CertManagement is CertsSelf or CertsExternal.
	CertManagement string
	// SecretName holds the self-managed CA and serving certificate, in the
	// binary's namespace (SecretNamespace).
	SecretName      string
	SecretNamespace string
	// DNSName is the name the API server dials: <service>.<namespace>.svc in a
	// cluster, localhost for a process outside one.
	DNSName string
	// Configurations are the ValidatingWebhookConfigurations whose caBundle the
	// binary keeps current in CertsSelf mode.
	Configurations []string
	// RotatorName names the certificate rotator's controller, which must be
	// unique in a process ("webhook-certs" if empty); a process running several
	// webhook servers, as tests do, names each.
	RotatorName string
	// CertDuration, Lookahead and RotationCheck tune rotation; zero takes the
	// defaults (a ten-year CA, a one-year serving certificate renewed 90 days
	// before it expires, checked every 12 hours).
	CertDuration, Lookahead, RotationCheck time.Duration
}

// BindFlags registers the webhook flags.
func (o *WebhookOptions) BindFlags(fs *flag.FlagSet) {
	fs.IntVar(&o.Port, "webhook-port", 0, "port of the admission webhook server; 0 serves no webhooks")
	fs.StringVar(&o.CertDir, "webhook-cert-dir", "/tmp/siterecovery-webhook-certs", "directory of the serving certificate (tls.crt, tls.key)")
	fs.StringVar(&o.CertManagement, "webhook-cert-management", CertsSelf, "self: create, rotate and inject our own certificate; external: cert-manager mounts it and injects the CA")
	fs.StringVar(&o.SecretName, "webhook-cert-secret", "", "Secret of the self-managed CA and serving certificate (self mode)")
	fs.StringVar(&o.SecretNamespace, "webhook-cert-namespace", "", "namespace of --webhook-cert-secret (defaults to --namespace, then to $POD_NAMESPACE)")
	fs.StringVar(&o.DNSName, "webhook-dns-name", "", "DNS name the API server uses for the webhook Service (self mode), e.g. svc.namespace.svc")
	fs.Func("webhook-configurations", "comma-separated ValidatingWebhookConfigurations whose caBundle to keep current (self mode)", func(s string) error {
		o.Configurations = nil
		for _, name := range strings.Split(s, ",") {
			if name = strings.TrimSpace(name); name != "" {
				o.Configurations = append(o.Configurations, name)
			}
		}
		return nil
	})
}

// Server is the webhook server NewManager gives the manager.
func (o WebhookOptions) Server() webhook.Server {
	return webhook.NewServer(webhook.Options{Host: o.Host, Port: o.Port, CertDir: o.CertDir})
}

func (o WebhookOptions) validate() error {
	if o.Port == 0 {
		return nil
	}
	switch o.CertManagement {
	case CertsExternal:
		return nil
	case CertsSelf:
		var missing []string
		if o.SecretName == "" {
			missing = append(missing, "--webhook-cert-secret")
		}
		if o.SecretNamespace == "" {
			missing = append(missing, "--namespace (or the pod namespace) for the certificate Secret")
		}
		if o.DNSName == "" {
			missing = append(missing, "--webhook-dns-name")
		}
		if len(o.Configurations) == 0 {
			missing = append(missing, "--webhook-configurations")
		}
		if len(missing) > 0 {
			return fmt.Errorf("webhooks with self-managed certificates need %s", strings.Join(missing, ", "))
		}
		return nil
	default:
		return fmt.Errorf("--webhook-cert-management is %q; use %q or %q", o.CertManagement, CertsSelf, CertsExternal)
	}
}

// ServeWebhooks registers a binary's webhooks once its serving certificate is in
// place. In CertsSelf mode it adds the rotator, which keeps the CA and serving
// certificate in SecretName and the caBundle of every configuration current,
// and a writer of that Secret's certificate into CertDir, so that a rotated
// certificate is served without waiting for the kubelet's Secret sync (and
// without a kubelet at all, for a process outside a cluster). The webhook
// server starts only after the certificate exists: it would fail on missing
// files.
func ServeWebhooks(mgr ctrl.Manager, o WebhookOptions, register func(ctrl.Manager) error) error {
	if o.Port == 0 {
		return nil
	}
	if err := o.validate(); err != nil {
		return err
	}
	if o.CertManagement == CertsExternal {
		return register(mgr)
	}
	ready := make(chan struct{})
	cr := &rotator.CertRotator{
		SecretKey:              types.NamespacedName{Namespace: o.SecretNamespace, Name: o.SecretName},
		CertDir:                o.CertDir,
		CAName:                 "siterecovery-webhook-ca",
		CAOrganization:         "siterecovery",
		DNSName:                o.DNSName,
		IsReady:                ready,
		FieldOwner:             "siterecovery-webhook-certs",
		CaCertDuration:         o.CertDuration * 10,
		ServerCertDuration:     o.CertDuration,
		LookaheadInterval:      o.Lookahead,
		RotationCheckFrequency: o.RotationCheck,
		// Every replica serves webhooks, so every replica keeps the files
		// current; the Secret's resourceVersion settles concurrent rotations.
		RequireLeaderElection: false,
		ControllerName:        cmp.Or(o.RotatorName, "webhook-certs"),
	}
	for _, name := range o.Configurations {
		cr.Webhooks = append(cr.Webhooks, rotator.WebhookInfo{Name: name, Type: rotator.Validating})
	}
	if err := rotator.AddRotator(mgr, cr); err != nil {
		return fmt.Errorf("adding the webhook certificate rotator: %w", err)
	}
	files, err := newCertFiles(mgr.GetConfig(), cr.SecretKey, o.CertDir)
	if err != nil {
		return err
	}
	if err := mgr.Add(files); err != nil {
		return err
	}
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		select {
		case <-ready:
		case <-ctx.Done():
			return nil
		}
		if err := register(mgr); err != nil {
			return fmt.Errorf("registering webhooks: %w", err)
		}
		<-ctx.Done()
		return nil
	}))
}
