package validate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/cli/clusters"
)

// Scope limits a run to one zone or one group; the zero value checks every
// zone and group of the DR namespace.
type Scope struct {
	Zone, Group string
}

// Input is what a run needs: the quorum cluster as the user reaches it.
type Input struct {
	Quorum       client.Client
	QuorumConfig *rest.Config
	Scheme       *runtime.Scheme
	Namespace    string
	Scope        Scope
}

// Run runs every check and returns the report. An error means the quorum
// cluster could not be read at all; everything else is a result.
func Run(ctx context.Context, in Input) (*Report, error) {
	r := &Report{Namespace: in.Namespace}
	zones := &srv1alpha1.ProtectionZoneList{}
	if err := in.Quorum.List(ctx, zones, client.InNamespace(in.Namespace)); err != nil {
		return nil, fmt.Errorf("listing ProtectionZones in %s: %w", in.Namespace, err)
	}
	groups := &srv1alpha1.ProtectionGroupList{}
	if err := in.Quorum.List(ctx, groups, client.InNamespace(in.Namespace)); err != nil {
		return nil, fmt.Errorf("listing ProtectionGroups in %s: %w", in.Namespace, err)
	}
	if in.Scope.Group != "" {
		in.Scope.Zone = ""
		for _, g := range groups.Items {
			if g.Name == in.Scope.Group && g.Spec.ZoneRef != nil {
				in.Scope.Zone = g.Spec.ZoneRef.Name
			}
		}
		if in.Scope.Zone == "" {
			return nil, fmt.Errorf("no ProtectionGroup %q with a zone in %s", in.Scope.Group, in.Namespace)
		}
	}
	crdVersions(r, "quorum", in.QuorumConfig, quorumResources)
	var probes []probe
	if p, err := clusters.ProbeServer(ctx, in.QuorumConfig); err == nil {
		probes = append(probes, probe{"quorum", p})
	}
	found := false
	for i := range zones.Items {
		z := &zones.Items[i]
		if in.Scope.Zone != "" && z.Name != in.Scope.Zone {
			continue
		}
		found = true
		var zoneGroups []srv1alpha1.ProtectionGroup
		for _, g := range groups.Items {
			if g.Spec.ZoneRef != nil && g.Spec.ZoneRef.Name == z.Name && (in.Scope.Group == "" || g.Name == in.Scope.Group) {
				zoneGroups = append(zoneGroups, g)
			}
		}
		zc := &zoneCheck{r: r, in: in, zone: z, groups: zoneGroups, conns: clusters.Connect(ctx, in.Quorum, in.Scheme, z)}
		probes = append(probes, zc.run(ctx)...)
	}
	if !found {
		return nil, fmt.Errorf("no ProtectionZone %q in %s", in.Scope.Zone, in.Namespace)
	}
	clockSkew(r, probes)
	return r, nil
}

type probe struct {
	cluster string
	p       clusters.Probe
}

// zoneCheck runs the checks of one zone.
type zoneCheck struct {
	r      *Report
	in     Input
	zone   *srv1alpha1.ProtectionZone
	groups []srv1alpha1.ProtectionGroup
	conns  []*clusters.Cluster
}

func (z *zoneCheck) target(cluster string) string { return z.zone.Name + "/" + cluster }

func (z *zoneCheck) run(ctx context.Context) []probe {
	var probes []probe
	for _, cl := range z.conns {
		t := z.target(cl.Name)
		if !z.secret(cl) {
			z.quorumReachability(cl)
			continue
		}
		p, err := clusters.ProbeServer(ctx, cl.Config)
		if err != nil {
			z.r.add("reachable", t, Problem, err.Error(),
				"check the cluster's API server and the network path from here; a failover away from it must be --unplanned")
			continue
		}
		z.r.ok("reachable", t, fmt.Sprintf("API server %s answered in %s", p.Version, p.Latency.Round(time.Millisecond)))
		probes = append(probes, probe{cl.Name, p})
		z.permissions(ctx, cl)
		crdVersions(z.r, t, cl.Config, workloadResources)
		z.taints(ctx, cl)
		if z.zone.Spec.StorageBackend == srv1alpha1.BackendDRBD || z.zone.Spec.StorageBackend == "" {
			z.agents(ctx, cl)
		}
		if cl.Role == srv1alpha1.ClusterRoleDR {
			z.snapshotClasses(ctx, cl)
		}
	}
	for i := range z.groups {
		g := &z.groups[i]
		if z.zone.Spec.StorageBackend == srv1alpha1.BackendDRBD || z.zone.Spec.StorageBackend == "" {
			z.drbd(ctx, g)
		}
		z.standbys(ctx, g)
		z.bootPlan(ctx, g)
		z.drill(g)
		z.networks(ctx, g)
		z.rpo(ctx, g)
		if b := z.zone.Spec.StorageBackend; b == srv1alpha1.BackendOffloaded || b == srv1alpha1.BackendVolSync {
			z.drPolicy(ctx, g, time.Now())
		}
	}
	return probes
}

// secret scores the cluster's kubeconfig Secret; it reports whether the CLI
// has a client of the cluster.
func (z *zoneCheck) secret(cl *clusters.Cluster) bool {
	t := z.target(cl.Name)
	switch {
	case cl.Usable():
		z.r.ok("kubeconfig", t, fmt.Sprintf("Secret %s parses and embeds its credential (no exec, auth provider or files)", cl.Secret))
		return true
	case errors.Is(cl.Err, clusters.ErrSecretForbidden):
		z.r.add("kubeconfig", t, Warning, cl.Err.Error()+"; the checks of this cluster use the quorum cluster's view",
			"run validate as a user who may get Secrets in "+z.zone.Namespace+" (the disaster-operator role) to check the cluster itself")
	default:
		z.r.add("kubeconfig", t, Problem, cl.Err.Error(),
			"store a kubeconfig with an embedded token or client certificate in the Secret (key "+srv1alpha1.KubeconfigSecretKey+")")
	}
	return false
}

// quorumReachability scores what quorum-manager last saw of a cluster the CLI
// cannot reach itself.
func (z *zoneCheck) quorumReachability(cl *clusters.Cluster) {
	t := z.target(cl.Name)
	for _, st := range z.zone.Status.Clusters {
		if st.Name != cl.Name {
			continue
		}
		for _, c := range st.Conditions {
			if c.Type != srv1alpha1.ConditionReachable {
				continue
			}
			if c.Status == "True" {
				z.r.ok("reachable", t, "quorum-manager reaches it: "+c.Message)
			} else {
				z.r.add("reachable", t, Problem, "quorum-manager does not reach it: "+c.Message,
					"check the cluster's API server and its kubeconfig Secret")
			}
			return
		}
	}
	z.r.add("reachable", t, Warning, "quorum-manager has not reported on this cluster yet", "check that quorum-manager runs")
}

// permissions asks the cluster, as the Secret's identity, for every right
// quorum-manager needs there.
func (z *zoneCheck) permissions(ctx context.Context, cl *clusters.Cluster) {
	var missing []string
	total := 0
	for _, n := range workloadNeeds {
		ns := ""
		if n.inDRNamespace {
			ns = z.zone.Namespace
		}
		var denied []string
		for _, verb := range n.verbs {
			total++
			ssar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: n.group, Resource: n.resource}}}
			if err := cl.Client.Create(ctx, ssar); err != nil {
				z.r.add("permissions", z.target(cl.Name), Warning, "cannot ask for access reviews: "+err.Error(), "")
				return
			}
			if !ssar.Status.Allowed {
				denied = append(denied, verb)
			}
		}
		if len(denied) > 0 {
			missing = append(missing, describe(denied, n, ns))
		}
	}
	if len(missing) > 0 {
		z.r.add("permissions", z.target(cl.Name), Problem,
			fmt.Sprintf("the identity of Secret %s may not: %s", cl.Secret, strings.Join(missing, "; ")),
			"bind that identity to the role the workload-control-plane chart provides for quorum-manager")
		return
	}
	z.r.ok("permissions", z.target(cl.Name), fmt.Sprintf("the identity of Secret %s has the %d rights quorum-manager uses", cl.Secret, total))
}

// describe renders denied verbs on one resource: "create,delete protectiongroups.siterecovery.trilio.io in dr-production",
// or without "in" for a cluster-wide right.
func describe(verbs []string, n need, ns string) string {
	res := n.resource
	if n.group != "" {
		res += "." + n.group
	}
	out := strings.Join(verbs, ",") + " " + res
	if ns != "" {
		out += " in " + ns
	}
	return out
}

// crdVersions checks that the cluster serves each resource of
// siterecovery.trilio.io in the version this CLI speaks.
func crdVersions(r *Report, target string, cfg *rest.Config, want []string) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		r.add("crd-versions", target, Problem, err.Error(), "")
		return
	}
	gv := srv1alpha1.GroupVersion.String()
	list, err := dc.ServerResourcesForGroupVersion(gv)
	if err != nil && !apierrors.IsNotFound(err) {
		r.add("crd-versions", target, Problem, "discovery failed: "+err.Error(), "")
		return
	}
	served := map[string]bool{}
	if list != nil {
		for _, res := range list.APIResources {
			served[res.Name] = true
		}
	}
	var missing []string
	for _, w := range want {
		if !served[w] {
			missing = append(missing, w)
		}
	}
	if len(missing) > 0 {
		r.add("crd-versions", target, Problem, fmt.Sprintf("%s does not serve %s", gv, strings.Join(missing, "; ")),
			"install or upgrade the chart's CRDs to the version of this CLI")
		return
	}
	r.ok("crd-versions", target, fmt.Sprintf("serves %s for %d kinds", gv, len(want)))
}

// taints reports nodes the agent tainted after DRBD lost quorum.
func (z *zoneCheck) taints(ctx context.Context, cl *clusters.Cluster) {
	nodes := &corev1.NodeList{}
	if err := cl.Client.List(ctx, nodes); err != nil {
		z.r.add("lost-quorum", z.target(cl.Name), Warning, "cannot list nodes: "+err.Error(), "")
		return
	}
	var tainted []string
	for _, n := range nodes.Items {
		for _, t := range n.Spec.Taints {
			if t.Key == srv1alpha1.LostQuorumTaintKey {
				tainted = append(tainted, n.Name)
			}
		}
	}
	if len(tainted) > 0 {
		z.r.add("lost-quorum", z.target(cl.Name), Problem,
			fmt.Sprintf("nodes with the %s taint (a DRBD resource lost quorum): %s", srv1alpha1.LostQuorumTaintKey, strings.Join(tainted, ", ")),
			"restore the replication link; a failover to this cluster removes the taint after its safety check. Never remove it by hand")
		return
	}
	z.r.ok("lost-quorum", z.target(cl.Name), fmt.Sprintf("no node of %d has the lost-quorum taint", len(nodes.Items)))
}
