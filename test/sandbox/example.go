package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/pgsync"
)

// The worked example of docs/recovery-plans.md: group shop, a database VM
// and two web VMs in the demo's application namespace, replicated with DRBD
// protocol C (every write a frozen guest completed is on the DR replica at
// once), with a network mapping, application consistency, a boot plan gated
// on the database's TCP port, and companion objects.
const (
	shopGroup = "shop"
	// sourceNetwork and drNetwork are the Multus networks the VMs use on
	// each site; the zone maps one to the other.
	sourceNetwork = "storage"
	drNetwork     = "dr-storage"
)

// shopVMs are the example's VMs and their tiers.
var shopVMs = []struct{ name, tier, mac string }{
	{"db", "db", "02:5a:00:00:00:01"}, {"web-1", "web", "02:5a:00:00:00:02"}, {"web-2", "web", "02:5a:00:00:00:03"},
}

// shopNetworks are the Multus networks each site has: NetworkAttachmentDefinitions
// in the application namespace, as the site's network administrator made them.
func shopNetworks(cluster string) []client.Object {
	name := map[string]string{primary: sourceNetwork, dr: drNetwork}[cluster]
	nad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
		"metadata": map[string]any{"namespace": appNS, "name": name},
		"spec":     map[string]any{"config": `{"cniVersion": "0.3.1", "type": "bridge", "bridge": "br-` + name + `"}`},
	}}
	return []client.Object{nad}
}

// shopVM is one VM of the example on the primary: the pod network (where
// the boot gate's probe reaches it) and the storage network with its MAC.
func shopVM(name, tier, mac string) *kubevirtv1.VirtualMachine {
	vm := demoVM(name)
	vm.Labels = map[string]string{"app": "shop", "tier": tier}
	spec := &vm.Spec.Template.Spec
	spec.Networks = []kubevirtv1.Network{
		{Name: "default", NetworkSource: kubevirtv1.NetworkSource{Pod: &kubevirtv1.PodNetwork{}}},
		{Name: "storage", NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: sourceNetwork}}},
	}
	spec.Domain.Devices.Interfaces = []kubevirtv1.Interface{
		{Name: "default", InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Masquerade: &kubevirtv1.InterfaceMasquerade{}}},
		{Name: "storage", MacAddress: mac, InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Bridge: &kubevirtv1.InterfaceBridge{}}},
	}
	return vm
}

// shopCompanions are the objects beside the VMs on the primary: the
// application's settings, its database password and its Service.
func shopCompanions() []client.Object {
	return []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: "shop-config", Labels: map[string]string{"app": "shop"}},
			Data: map[string]string{"DB_HOST": "db.primary.example", "POOL": "10"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: "shop-db", Labels: map[string]string{"app": "shop"}},
			StringData: map[string]string{"password": "sandbox-only-password"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: "shop", Labels: map[string]string{"app": "shop"}},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"tier": "web"},
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}}},
	}
}

// example runs the worked example: seeds and protects the three VMs, maps
// the networks in the zone, gives the group its plan, consistency and
// companions, runs a test failover (the application-consistent point), a
// planned failover to dr (the stage timeline, the mapped network on the
// started VMs, the companions in place) and the failback.
func (sb *sandbox) example(ctx context.Context) error {
	say("worked example (docs/recovery-plans.md): group %s, a database VM and two web VMs, protocol C", shopGroup)
	if err := sb.seedShop(ctx); err != nil {
		return err
	}
	if err := sb.mapNetworks(ctx); err != nil {
		return err
	}
	names := make([]string, len(shopVMs))
	for i, v := range shopVMs {
		names[i] = v.name
	}
	if err := sb.protect(ctx, shopGroup, names, srv1alpha1.ProtocolC); err != nil {
		return err
	}
	if err := sb.planShop(ctx); err != nil {
		return err
	}
	if err := sb.waitCompanions(ctx, dr); err != nil {
		return err
	}
	if err := sb.printCompanionCopies(ctx, dr); err != nil {
		return err
	}
	if err := sb.testFailoverOf(ctx, shopGroup); err != nil {
		return err
	}
	if err := sb.printConsistency(ctx); err != nil {
		return err
	}
	if err := sb.printStartedNetworks(ctx, primary); err != nil {
		return err
	}
	if err := sb.failoverGroup(ctx, shopGroup, "shop-to-dr", dr, srv1alpha1.FailoverPlanned); err != nil {
		return err
	}
	if err := sb.printStartedNetworks(ctx, dr); err != nil {
		return err
	}
	// The originals on the former primary are pg-sync's sources no more, nor
	// its copies: it reports them and leaves them alone until the failback.
	if err := sb.waitCompanionsReported(ctx, primary); err != nil {
		return err
	}
	if err := sb.printCompanionCopies(ctx, dr); err != nil {
		return err
	}
	if err := sb.failoverGroup(ctx, shopGroup, "shop-back-to-primary", primary, srv1alpha1.FailoverPlanned); err != nil {
		return err
	}
	return sb.printStartedNetworks(ctx, primary)
}

// seedShop creates the example's disks, VMs and companions on the primary.
func (sb *sandbox) seedShop(ctx context.Context) error {
	c := sb.zone.Clusters[primary].Client
	var objs []client.Object
	for _, v := range shopVMs {
		objs = append(objs, blockPVC(v.name+"-rootdisk"), shopVM(v.name, v.tier, v.mac))
	}
	for _, obj := range append(objs, shopCompanions()...) {
		err := poll(ctx, time.Minute, func() (bool, error) {
			err := c.Create(ctx, obj.DeepCopyObject().(client.Object))
			return err == nil || apierrors.IsAlreadyExists(err), nil
		})
		if err != nil {
			return fmt.Errorf("creating %T %s on %s: %w", obj, obj.GetName(), primary, err)
		}
	}
	return nil
}

// mapNetworks gives the zone its network mapping, as an operator edits it:
// primary's storage network is dr-storage on dr (with new MACs there), and
// back for the failback.
func (sb *sandbox) mapNetworks(ctx context.Context) error {
	q := sb.zone.Clusters["quorum"].Client
	z := &srv1alpha1.ProtectionZone{}
	if err := q.Get(ctx, client.ObjectKey{Namespace: drNamespace, Name: zoneName}, z); err != nil {
		return err
	}
	before := z.DeepCopy()
	z.Spec.NetworkMappings = []srv1alpha1.NetworkMapping{
		{SourceCluster: primary, TargetCluster: dr, MACPolicy: srv1alpha1.MACPolicyGenerate,
			Networks: []srv1alpha1.MultusNetworkMap{{Source: sourceNetwork, Target: drNetwork}}},
		{SourceCluster: dr, TargetCluster: primary,
			Networks: []srv1alpha1.MultusNetworkMap{{Source: drNetwork, Target: sourceNetwork}}},
	}
	if err := q.Patch(ctx, z, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("mapping the networks of zone %s: %w", zoneName, err)
	}
	say("zone %s maps network %s on %s to %s on %s (macPolicy Generate), and back", zoneName, sourceNetwork, primary, drNetwork, dr)
	return nil
}

// planShop gives the group its boot plan, consistency and companions, as
// docs/recovery-plans.md shows them. The ConfigMap's DB_HOST and the
// Service's annotation differ on dr; the Secret is copied on request.
func (sb *sandbox) planShop(ctx context.Context) error {
	q := sb.zone.Clusters["quorum"].Client
	pg := &srv1alpha1.ProtectionGroup{}
	if err := q.Get(ctx, client.ObjectKey{Namespace: drNamespace, Name: shopGroup}, pg); err != nil {
		return err
	}
	before := pg.DeepCopy()
	pg.Spec.Boot = &srv1alpha1.BootPlan{OnStageTimeout: srv1alpha1.StageTimeoutStop, Stages: []srv1alpha1.BootStage{
		{Name: "database", VirtualMachines: []string{"db"}, TimeoutSeconds: 300,
			Gate: srv1alpha1.BootGate{Type: srv1alpha1.GateTCP, Port: 5432}},
		{Name: "web", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}, TimeoutSeconds: 300,
			Gate: srv1alpha1.BootGate{Type: srv1alpha1.GateReady}},
	}}
	pg.Spec.Consistency = &srv1alpha1.ConsistencySpec{Mode: srv1alpha1.ConsistencyApplication, FreezeTimeoutSeconds: 30}
	pg.Spec.Companions = &srv1alpha1.CompanionObjects{
		CopySecrets: true,
		Objects: []srv1alpha1.CompanionSelector{
			{Kind: srv1alpha1.CompanionConfigMap, Namespace: appNS, Name: "shop-config"},
			{Kind: srv1alpha1.CompanionSecret, Namespace: appNS, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "shop"}}},
			{Kind: srv1alpha1.CompanionService, Namespace: appNS, Name: "shop"},
		},
		Overrides: []srv1alpha1.CompanionOverride{
			override(srv1alpha1.CompanionConfigMap, "shop-config", map[string]any{"data": map[string]any{"DB_HOST": "db.dr.example"}}),
			override(srv1alpha1.CompanionService, "shop", map[string]any{"metadata": map[string]any{"annotations": map[string]any{"example.com/site": "dr"}}}),
		},
	}
	if err := q.Patch(ctx, pg, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("setting the plan of %s: %w", shopGroup, err)
	}
	say("group %s: stage database (db, gated on TCP 5432), then stage web (tier=web, Ready); consistency Application (freeze bound 30s); companions ConfigMap shop-config (DB_HOST differs on %s), Secrets app=shop (copySecrets), Service shop", shopGroup, dr)
	return nil
}

// override is a companion's merge patch on the dr copy.
func override(kind srv1alpha1.CompanionKind, name string, patch map[string]any) srv1alpha1.CompanionOverride {
	raw, _ := json.Marshal(patch) //nolint:errchkjson // maps of strings always marshal
	return srv1alpha1.CompanionOverride{Kind: kind, Namespace: appNS, Name: name, Cluster: dr, MergePatch: runtime.RawExtension{Raw: raw}}
}

// waitCompanions waits until the quorum group reports its three companions
// InSync on cluster.
func (sb *sandbox) waitCompanions(ctx context.Context, cluster string) error {
	var last []srv1alpha1.CompanionStatus
	err := poll(ctx, 3*time.Minute, func() (bool, error) {
		pg := &srv1alpha1.ProtectionGroup{}
		if err := sb.zone.Clusters["quorum"].Client.Get(ctx, client.ObjectKey{Namespace: drNamespace, Name: shopGroup}, pg); err != nil {
			return false, err
		}
		last = pg.Status.Companions
		in := 0
		for _, st := range last {
			if st.Cluster == cluster && st.State == srv1alpha1.CompanionInSync {
				in++
			}
		}
		return in == 3, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the companions of %s on %s (status %+v): %w", shopGroup, cluster, last, err)
	}
	return nil
}

// waitCompanionsReported waits until the quorum group reports its three
// companions on cluster, in whatever state.
func (sb *sandbox) waitCompanionsReported(ctx context.Context, cluster string) error {
	return poll(ctx, 2*time.Minute, func() (bool, error) {
		pg := &srv1alpha1.ProtectionGroup{}
		if err := sb.zone.Clusters["quorum"].Client.Get(ctx, client.ObjectKey{Namespace: drNamespace, Name: shopGroup}, pg); err != nil {
			return false, err
		}
		n := 0
		for _, st := range pg.Status.Companions {
			if st.Cluster == cluster {
				n++
			}
		}
		return n == 3, nil
	})
}

// printCompanionCopies prints the companions as they are on cluster, next
// to the primary's originals: the ConfigMap's DB_HOST, the Service's
// annotation and cluster IP, the Secret's keys (never its values), and who
// made each.
func (sb *sandbox) printCompanionCopies(ctx context.Context, cluster string) error {
	fmt.Printf("\n  companions of %s in %s on %s (originals on %s)\n", shopGroup, appNS, cluster, primary)
	for _, site := range []string{primary, cluster} {
		c := sb.zone.Clusters[site].Client
		cm, sec, svc := &corev1.ConfigMap{}, &corev1.Secret{}, &corev1.Service{}
		for _, obj := range []client.Object{cm, sec, svc} {
			name := map[string]string{"*v1.ConfigMap": "shop-config", "*v1.Secret": "shop-db", "*v1.Service": "shop"}[fmt.Sprintf("%T", obj)]
			if err := c.Get(ctx, client.ObjectKey{Namespace: appNS, Name: name}, obj); err != nil {
				return fmt.Errorf("companion %s on %s: %w", name, site, err)
			}
		}
		made := func(o client.Object) string {
			if o.GetLabels()[pgsync.CreatedByLabel] == pgsync.ControllerName {
				return "copy by pg-sync"
			}
			return "original"
		}
		fmt.Printf("  %-8s ConfigMap shop-config DB_HOST=%s (%s)\n", site, cm.Data["DB_HOST"], made(cm))
		fmt.Printf("  %-8s Secret shop-db keys %v (%s)\n", site, slices.Sorted(maps.Keys(sec.Data)), made(sec))
		fmt.Printf("  %-8s Service shop clusterIP %s site=%q (%s)\n", site, svc.Spec.ClusterIP, svc.Annotations["example.com/site"], made(svc))
	}
	pg := &srv1alpha1.ProtectionGroup{}
	if err := sb.zone.Clusters["quorum"].Client.Get(ctx, client.ObjectKey{Namespace: drNamespace, Name: shopGroup}, pg); err != nil {
		return err
	}
	for _, st := range pg.Status.Companions {
		fmt.Printf("  status.companions: %s %s on %s: %s %s\n", st.Kind, st.Name, st.Cluster, st.State, st.Message)
	}
	fmt.Println()
	return nil
}

// printConsistency prints the group's last replication point: the line the
// README quotes.
func (sb *sandbox) printConsistency(ctx context.Context) error {
	pg := &srv1alpha1.ProtectionGroup{}
	if err := sb.zone.Clusters["quorum"].Client.Get(ctx, client.ObjectKey{Namespace: drNamespace, Name: shopGroup}, pg); err != nil {
		return err
	}
	if pg.Status.Consistency == nil || pg.Status.Consistency.LastPoint == nil {
		return fmt.Errorf("group %s recorded no replication point after its test failover", shopGroup)
	}
	p := pg.Status.Consistency.LastPoint
	fmt.Printf("\n  last point of %s: %s, source %s, at %s, longest freeze %dms", shopGroup, p.Consistency, p.Source,
		p.Time.Format("15:04:05"), p.FrozenMilliseconds)
	if len(p.CrashConsistentVMs) > 0 {
		fmt.Printf(", not frozen: %s (%s)", strings.Join(p.CrashConsistentVMs, ", "), p.Message)
	}
	fmt.Print("\n\n")
	if p.Consistency != srv1alpha1.ConsistencyApplication {
		return fmt.Errorf("the point of %s is %s, not Application: %s", shopGroup, p.Consistency, p.Message)
	}
	return nil
}

// printStartedNetworks prints, for each VM of the example on cluster, the
// networks of the VM that runs there and its instance's interfaces (a MAC
// the spec leaves empty is one KubeVirt picks when the VM starts).
func (sb *sandbox) printStartedNetworks(ctx context.Context, cluster string) error {
	c := sb.zone.Clusters[cluster].Client
	fmt.Printf("\n  networks of %s's VMs started on %s\n", shopGroup, cluster)
	for _, v := range shopVMs {
		key := client.ObjectKey{Namespace: appNS, Name: v.name}
		vm, vmi := &kubevirtv1.VirtualMachine{}, &kubevirtv1.VirtualMachineInstance{}
		if err := c.Get(ctx, key, vm); err != nil {
			return err
		}
		if err := c.Get(ctx, key, vmi); err != nil {
			return fmt.Errorf("VM %s on %s has no instance: %w", key, cluster, err)
		}
		var nets, ifaces []string
		for _, n := range vm.Spec.Template.Spec.Networks {
			if n.Multus != nil {
				nets = append(nets, n.Name+"->multus "+n.Multus.NetworkName)
			} else {
				nets = append(nets, n.Name+"->pod")
			}
		}
		for _, i := range vmi.Status.Interfaces {
			ifaces = append(ifaces, fmt.Sprintf("%s ip=%q mac=%q", i.Name, i.IP, i.MAC))
		}
		fmt.Printf("  %-6s %-8s networks %v; interfaces %v\n", v.name, vmi.Status.Phase, nets, ifaces)
	}
	fmt.Println()
	return nil
}
