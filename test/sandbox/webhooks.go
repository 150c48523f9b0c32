package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/chartrender"
)

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
