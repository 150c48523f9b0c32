package kubeconfig

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// ErrSecretForbidden means the reader may not read the cluster's kubeconfig
// Secret.
var ErrSecretForbidden = errors.New("not allowed to read the kubeconfig Secret")

// FromSecret reads the kubeconfig Secret ref in namespace ns with reader (the
// caller's own identity decides whether it may) and turns it into a
// rest.Config under the rules of RESTConfig. Its errors name the Secret and
// key, never its content.
func FromSecret(ctx context.Context, reader client.Reader, ns string, ref srv1alpha1.SecretKeyReference, limits Limits) (*rest.Config, error) {
	key := ref.Key
	if key == "" {
		key = srv1alpha1.KubeconfigSecretKey
	}
	sec := &corev1.Secret{}
	err := reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, sec)
	switch {
	case apierrors.IsForbidden(err):
		return nil, fmt.Errorf("%w %s/%s", ErrSecretForbidden, ns, ref.Name)
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("kubeconfig Secret %s/%s does not exist", ns, ref.Name)
	case err != nil:
		return nil, fmt.Errorf("reading kubeconfig Secret %s/%s: %w", ns, ref.Name, err)
	}
	data, ok := sec.Data[key]
	if !ok {
		return nil, fmt.Errorf("kubeconfig Secret %s/%s has no key %q", ns, ref.Name, key)
	}
	cfg, err := RESTConfig(data, limits)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig Secret %s/%s: %w", ns, ref.Name, err)
	}
	return cfg, nil
}
