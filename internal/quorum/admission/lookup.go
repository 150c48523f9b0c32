package admission

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// groupAndZone reads a request's group and its zone, refusing with a message
// that names what exists when either does not.
func groupAndZone(ctx context.Context, c client.Reader, namespace string, ref srv1alpha1.ProtectionGroupReference) (*srv1alpha1.ProtectionGroup, *srv1alpha1.ProtectionZone, error) {
	if ref.Namespace != "" && ref.Namespace != namespace {
		return nil, nil, fmt.Errorf("protectionGroupRef.namespace is %q; it must be the request's namespace %q, because a DR namespace only acts on its own groups", ref.Namespace, namespace)
	}
	g := &srv1alpha1.ProtectionGroup{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, g); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("ProtectionGroup %q does not exist in namespace %s; %s", ref.Name, namespace, existingGroups(ctx, c, namespace))
	}
	if g.Spec.ZoneRef == nil {
		return nil, nil, fmt.Errorf("ProtectionGroup %s has no zoneRef; protect its VMs through a ProtectionZone first", g.Name)
	}
	z := &srv1alpha1.ProtectionZone{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: g.Spec.ZoneRef.Name}, z); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("ProtectionZone %q of group %s does not exist in namespace %s", g.Spec.ZoneRef.Name, g.Name, namespace)
	}
	return g, z, nil
}

func existingGroups(ctx context.Context, c client.Reader, namespace string) string {
	list := &srv1alpha1.ProtectionGroupList{}
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil || len(list.Items) == 0 {
		return "it has no groups yet"
	}
	names := make([]string, 0, len(list.Items))
	for i := range list.Items {
		names = append(names, list.Items[i].Name)
	}
	sort.Strings(names)
	return "its groups are: " + strings.Join(names, ", ")
}

// clustersOf lists a zone's cluster names.
func clustersOf(z *srv1alpha1.ProtectionZone) []string {
	names := make([]string, 0, len(z.Spec.Clusters))
	for _, c := range z.Spec.Clusters {
		names = append(names, c.Name)
	}
	return names
}

// targetsOf lists the clusters a group can move to: its zone's, except the
// one it runs on.
func targetsOf(z *srv1alpha1.ProtectionZone, active string) []string {
	var out []string
	for _, name := range clustersOf(z) {
		if name != active {
			out = append(out, name)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// primaryOf returns the zone's Primary cluster.
func primaryOf(z *srv1alpha1.ProtectionZone) string {
	for _, c := range z.Spec.Clusters {
		if c.Role == srv1alpha1.ClusterRolePrimary {
			return c.Name
		}
	}
	return ""
}
