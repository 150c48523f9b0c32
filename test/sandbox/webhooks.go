package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/chartrender"
)

// installWebhooks registers quorum-manager's admission webhooks on the quorum
// cluster as the quorum-control-plane chart renders them, calling the
// quorum-manager process on this machine, and returns the flags that make it
// serve them with a self-managed CA. A user trying bad input in the sandbox
// meets the same refusals as on a real cluster.
func (sb *sandbox) installWebhooks(ctx context.Context) ([]string, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	objs, err := chartrender.Render("quorum-control-plane", drNamespace)
	if err != nil {
		return nil, err
	}
	w, err := chartrender.LocalWebhooks(objs, port)
	if err != nil {
		return nil, err
	}
	q := sb.zone.Clusters["quorum"].Client
	var names []string
	for _, cfg := range w.Configurations {
		if err := q.Create(ctx, cfg); err != nil {
			return nil, err
		}
		names = append(names, cfg.Name)
	}
	if err := q.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: drNamespace, Name: w.CertSecret}}); err != nil {
		return nil, err
	}
	return []string{
		fmt.Sprintf("--webhook-port=%d", port), "--webhook-cert-management=self",
		"--webhook-cert-secret=" + w.CertSecret, "--webhook-dns-name=localhost",
		"--webhook-cert-dir=" + sb.o.workDir + "/webhook-certs",
		"--webhook-configurations=" + strings.Join(names, ","),
	}, nil
}

// waitWebhooks waits until quorum-manager's webhooks answer: a dry-run request
// for a group that does not exist is refused by the webhook, not by a TLS or
// connection error.
func (sb *sandbox) waitWebhooks(ctx context.Context) error {
	q := sb.zone.Clusters["quorum"].Client
	probe := &srv1alpha1.FailoverRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: drNamespace, Name: "webhook-probe"},
		Spec: srv1alpha1.FailoverRequestSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: "no-such-group"},
			TargetCluster: dr, FailoverType: srv1alpha1.FailoverPlanned, DrainTimeoutSeconds: 60, BatchBootTimeoutSeconds: 60},
	}
	return poll(ctx, time.Minute, func() (bool, error) {
		err := q.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		if err == nil {
			return false, errors.New("the webhook probe was admitted: quorum-manager's webhooks are not registered")
		}
		return strings.Contains(err.Error(), "does not exist in namespace"), nil
	})
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}
