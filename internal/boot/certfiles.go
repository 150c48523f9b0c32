package boot

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
)

// certFiles writes the serving certificate of the webhook Secret into the
// webhook server's certificate directory whenever the Secret changes; the
// server's certificate watcher then serves the new one. It watches that one
// Secret by name, so it needs no right on other Secrets, and it never writes the
// CA's private key to disk.
type certFiles struct {
	lw  *toolscache.ListWatch
	dir string
}

func newCertFiles(cfg *rest.Config, key types.NamespacedName, dir string) (*certFiles, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	lw := toolscache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "secrets", key.Namespace,
		fields.OneTermEqualSelector("metadata.name", key.Name))
	return &certFiles{lw: lw, dir: dir}, nil
}

// NeedLeaderElection is false: every replica serves webhooks.
func (c *certFiles) NeedLeaderElection() bool { return false }

// Start follows the Secret until ctx ends.
func (c *certFiles) Start(ctx context.Context) error {
	log := ctrl.Log.WithName("webhook-certs")
	write := func(obj any) {
		s, ok := obj.(*corev1.Secret)
		if !ok {
			return
		}
		if err := c.write(s); err != nil {
			log.Error(err, "writing the serving certificate", "dir", c.dir)
		}
	}
	_, informer := toolscache.NewInformerWithOptions(toolscache.InformerOptions{
		ListerWatcher: c.lw,
		ObjectType:    &corev1.Secret{},
		Handler: toolscache.ResourceEventHandlerFuncs{
			AddFunc:    write,
			UpdateFunc: func(_, obj any) { write(obj) },
		},
	})
	informer.RunWithContext(ctx)
	return nil
}

// write replaces tls.crt and tls.key, each by a rename, key first: the watcher
// reloads on the certificate's change and then finds the matching key.
func (c *certFiles) write(s *corev1.Secret) error {
	crt, key := s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]
	if len(crt) == 0 || len(key) == 0 {
		return nil // the rotator has not filled the Secret yet
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{corev1.TLSPrivateKeyKey, key}, {corev1.TLSCertKey, crt}} {
		if err := writeAtomic(filepath.Join(c.dir, f.name), f.data); err != nil {
			return err
		}
	}
	return nil
}

func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replacing %s: %w", filepath.Base(path), err)
	}
	return nil
}
