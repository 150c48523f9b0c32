package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/kubeconfig"
)

// workloadTimeout bounds each read of a workload cluster: a page waits for
// at most this long on a site that does not answer.
const workloadTimeout = 10 * time.Second

// errNotVisible says why the console does not read a workload cluster for
// this user; its message is shown as it is.
type errNotVisible struct{ msg string }

func (e errNotVisible) Error() string { return e.msg }

// workloadClient returns a client of one cluster of a zone, for a user whom
// the quorum cluster lets read that cluster's kubeconfig Secret: the console
// asks with the user's own SelfSubjectAccessReview, then reads the Secret
// with the user's token, so it never reaches a site the user could not reach
// with kubectl. Otherwise the error is an errNotVisible saying so. The
// credential stays in this process: it is in no response, log or error.
func (s *Server) workloadClient(ctx context.Context, r request, z *srv1alpha1.ProtectionZone, cluster string) (client.Client, error) {
	var zc *srv1alpha1.ZoneCluster
	for i := range z.Spec.Clusters {
		if z.Spec.Clusters[i].Name == cluster {
			zc = &z.Spec.Clusters[i]
		}
	}
	if zc == nil {
		return nil, errNotVisible{fmt.Sprintf("cluster %s is not in zone %s", cluster, z.Name)}
	}
	ref := zc.KubeconfigSecretRef
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: z.Namespace, Verb: "get", Resource: "secrets", Name: ref.Name},
	}}
	if err := r.client.Create(ctx, review); err != nil {
		return nil, fmt.Errorf("asking whether you may read Secret %s/%s: %w", z.Namespace, ref.Name, err)
	}
	if !review.Status.Allowed {
		return nil, errNotVisible{fmt.Sprintf("not shown: %s is read through the kubeconfig Secret %s/%s, which you may not read",
			cluster, z.Namespace, ref.Name)}
	}
	cfg, err := kubeconfig.FromSecret(ctx, r.client, z.Namespace, ref, kubeconfig.Limits{QPS: 20, Burst: 40, Timeout: workloadTimeout})
	if errors.Is(err, kubeconfig.ErrSecretForbidden) {
		return nil, errNotVisible{fmt.Sprintf("not shown: you may not read the kubeconfig Secret %s/%s of %s", z.Namespace, ref.Name, cluster)}
	}
	if err != nil {
		return nil, errNotVisible{fmt.Sprintf("not shown: %s", err)}
	}
	cfg.UserAgent = "siterecovery-console"
	cl, err := client.New(cfg, client.Options{Scheme: s.opts.Scheme, Mapper: s.clients.mapper})
	if err != nil {
		return nil, errNotVisible{fmt.Sprintf("not shown: a client of %s: %s", cluster, err)}
	}
	return cl, nil
}

// zoneNamed finds a zone of the user's snapshot.
func zoneNamed(snap *snapshot, ns, name string) *srv1alpha1.ProtectionZone {
	for i := range snap.zones {
		if z := &snap.zones[i]; z.Namespace == ns && z.Name == name {
			return z
		}
	}
	return nil
}

// clusterWithRole names the zone's cluster of a role.
func clusterWithRole(z *srv1alpha1.ProtectionZone, role srv1alpha1.ClusterRole) string {
	for _, c := range z.Spec.Clusters {
		if c.Role == role {
			return c.Name
		}
	}
	return ""
}
