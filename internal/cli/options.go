package cli

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
)

// userAgent names the CLI in the API servers' audit logs.
const userAgent = "kubectl-siterecovery"

// Options are the flags every command shares: the quorum cluster's kubeconfig
// flags. Each command has its own -o (printFlags).
type Options struct {
	Flags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	quorum client.Client
}

// Quorum returns a client of the quorum cluster.
func (o *Options) Quorum() (client.Client, error) {
	if o.quorum != nil {
		return o.quorum, nil
	}
	cfg, err := o.Flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = userAgent
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, err
	}
	o.quorum = c
	return c, nil
}

// Namespace is the DR namespace: --namespace, else the kubeconfig context's.
// explicit is false when neither names one.
func (o *Options) Namespace() (ns string, explicit bool, err error) {
	return o.Flags.ToRawKubeConfigLoader().Namespace()
}

// namespaces are the DR namespaces a list verb shows: with -A every
// namespace holding a ProtectionZone, else the one -n or the kubeconfig
// context names (as kubectl: "default" when neither does).
func (o *Options) namespaces(ctx context.Context, c client.Client, all bool) ([]string, error) {
	if !all {
		ns, _, err := o.Namespace()
		if err != nil {
			return nil, err
		}
		return []string{ns}, nil
	}
	zones := &srv1alpha1.ProtectionZoneList{}
	if err := c.List(ctx, zones); err != nil {
		return nil, err
	}
	var out []string
	for _, z := range zones.Items {
		if !slices.Contains(out, z.Namespace) {
			out = append(out, z.Namespace)
		}
	}
	sort.Strings(out)
	return out, nil
}

// inNamespace is what every verb that acts in one DR namespace starts from:
// the quorum cluster's client and that namespace (Namespace).
func (o *Options) inNamespace() (client.Client, string, error) {
	c, err := o.Quorum()
	if err != nil {
		return nil, "", err
	}
	ns, _, err := o.Namespace()
	if err != nil {
		return nil, "", err
	}
	return c, ns, nil
}

// onGroup is inNamespace and the ProtectionGroup name of it that the verb
// acts on.
func (o *Options) onGroup(ctx context.Context, name string) (client.Client, string, *srv1alpha1.ProtectionGroup, error) {
	c, ns, err := o.inNamespace()
	if err != nil {
		return nil, "", nil, err
	}
	pg, err := o.group(ctx, c, ns, name)
	if err != nil {
		return nil, "", nil, err
	}
	return c, ns, pg, nil
}

// inNamespaces is what every list verb starts from: the quorum cluster's
// client and the DR namespaces it shows (namespaces).
func (o *Options) inNamespaces(ctx context.Context, all bool) (client.Client, []string, error) {
	c, err := o.Quorum()
	if err != nil {
		return nil, nil, err
	}
	nss, err := o.namespaces(ctx, c, all)
	if err != nil {
		return nil, nil, err
	}
	return c, nss, nil
}

// group reads a ProtectionGroup of the DR namespace.
func (o *Options) group(ctx context.Context, c client.Client, ns, name string) (*srv1alpha1.ProtectionGroup, error) {
	pg := &srv1alpha1.ProtectionGroup{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pg); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("no ProtectionGroup %q in DR namespace %q (use -n to pick the DR namespace)", name, ns)
		}
		return nil, err
	}
	return pg, nil
}

// zoneOf reads the group's ProtectionZone.
func zoneOf(ctx context.Context, c client.Client, pg *srv1alpha1.ProtectionGroup) (*srv1alpha1.ProtectionZone, error) {
	if pg.Spec.ZoneRef == nil {
		return nil, fmt.Errorf("ProtectionGroup %s has no zoneRef", pg.Name)
	}
	z := &srv1alpha1.ProtectionZone{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: pg.Namespace, Name: pg.Spec.ZoneRef.Name}, z); err != nil {
		return nil, err
	}
	return z, nil
}

// since renders a duration for tables: whole seconds below a minute.
func since(d time.Duration) string {
	if d < time.Minute {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
