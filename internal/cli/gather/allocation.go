package gather

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/cli/clusters"
)

// allocation writes the cluster's DRBDAllocation with the claims of this DR
// namespace only: the cluster's one allocation also lists the requests of
// other DR namespaces, which the bundle's reader may not see. Their claims
// are counted in a note, which is enough to tell a port shortage apart.
func (g *gatherer) allocation(ctx context.Context, cl *clusters.Cluster, path string) error {
	a := &srv1alpha1.DRBDAllocation{}
	err := cl.Client.Get(ctx, client.ObjectKey{Name: srv1alpha1.DRBDAllocationName}, a)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return nil
	case err != nil:
		g.b.note("%s: %s: %v", cl.Name, path, err)
		return nil
	}
	n := len(a.Spec.Claims)
	a.Spec.Claims = slices.DeleteFunc(a.Spec.Claims, func(c srv1alpha1.DRBDClaim) bool { return c.DRNamespace != g.in.Namespace })
	a.SetManagedFields(nil)
	a.SetGroupVersionKind(srv1alpha1.GroupVersion.WithKind("DRBDAllocation"))
	out, err := yaml.Marshal(a)
	if err != nil {
		return err
	}
	return g.b.add(path, fmt.Sprintf("%d claims of %s; %d of other DR namespaces left out", len(a.Spec.Claims), g.in.Namespace, n-len(a.Spec.Claims)), out)
}
