package gather

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/cli/clusters"
)

// Input is what a bundle is gathered from.
type Input struct {
	Quorum       client.Client
	QuorumConfig *rest.Config
	Scheme       *runtime.Scheme
	Namespace    string
	// Since bounds events and logs; 0 takes everything.
	Since time.Duration
	// Reports are files the caller made (status, validate), by path.
	Reports map[string][]byte
}

// Labels of the product's pods, as the charts set them.
const nameLabel = "app.kubernetes.io/name"

// Write gathers the bundle into w. Errors reading one kind or cluster become
// notes in the README; only a failure to write fails the bundle.
func Write(ctx context.Context, w io.Writer, in Input) error {
	red := newRedactor()
	addConfig(red, in.QuorumConfig)
	root := "siterecovery-" + in.Namespace + "-" + time.Now().UTC().Format("20060102T150405Z")
	b := newBundle(w, root, red)
	g := &gatherer{b: b, in: in}

	// Secrets first: their values must be known before any file is written.
	zones := &srv1alpha1.ProtectionZoneList{}
	if err := in.Quorum.List(ctx, zones, client.InNamespace(in.Namespace)); err != nil {
		return fmt.Errorf("listing ProtectionZones: %w", err)
	}
	var conns []*clusters.Cluster
	for i := range zones.Items {
		conns = append(conns, clusters.Connect(ctx, in.Quorum, in.Scheme, &zones.Items[i])...)
	}
	for _, cl := range conns {
		if cl.Usable() {
			addConfig(red, cl.Config)
		}
	}
	if err := g.secrets(ctx); err != nil {
		return err
	}

	groups := &srv1alpha1.ProtectionGroupList{}
	_ = in.Quorum.List(ctx, groups, client.InNamespace(in.Namespace))
	vmNamespaces := map[string]bool{}
	for _, pg := range groups.Items {
		for _, vm := range pg.Spec.VirtualMachines {
			vmNamespaces[vm.Namespace] = true
		}
	}
	// Guest data next, for the same reason as Secrets.
	g.learnGuestData(ctx, conns, sortedKeys(vmNamespaces))

	ns := client.InNamespace(in.Namespace)
	for _, l := range []struct {
		file string
		list client.ObjectList
	}{
		{"protectionzones", &srv1alpha1.ProtectionZoneList{}},
		{"protectiongroups", &srv1alpha1.ProtectionGroupList{}},
		{"protectionrequests", &srv1alpha1.ProtectionRequestList{}},
		{"failoverrequests", &srv1alpha1.FailoverRequestList{}},
		{"testfailovers", &srv1alpha1.TestFailoverList{}},
		{"replicationgroupstatuses", &srv1alpha1.ReplicationGroupStatusList{}},
		{"rpoevents", &srv1alpha1.RPOEventList{}},
		{"drpolicies", &drv1alpha1.DRPolicyList{}},
		{"drplacementcontrols", &drv1alpha1.DRPlacementControlList{}},
		{"leases", &coordinationv1.LeaseList{}},
	} {
		if err := g.dump(ctx, "quorum", in.Quorum, "quorum/"+l.file+".yaml", l.list, ns); err != nil {
			return err
		}
	}
	if err := g.events(ctx, "quorum", in.Quorum, "quorum/events.yaml", in.Namespace); err != nil {
		return err
	}
	if err := g.logs(ctx, "quorum", in.QuorumConfig, "quorum/logs", []string{in.Namespace}, "quorum-manager"); err != nil {
		return err
	}

	for _, cl := range conns {
		dir := "clusters/" + cl.Zone + "/" + cl.Name
		if !cl.Usable() {
			b.note("cluster %s: %v; the bundle holds the quorum cluster's view of it only", cl.Name, cl.Err)
			continue
		}
		if err := g.workload(ctx, cl, dir, vmNamespaces); err != nil {
			return err
		}
	}
	for _, path := range sortedKeys(in.Reports) {
		if err := b.add(path, "report of the same name", in.Reports[path]); err != nil {
			return err
		}
	}
	header := fmt.Sprintf("siterecovery support bundle\nDR namespace: %s\ngathered: %s\nevents and logs since: %s\n",
		in.Namespace, b.now.UTC().Format(time.RFC3339), sinceText(in.Since))
	return b.close(header)
}

type gatherer struct {
	b  *bundle
	in Input
}

func (g *gatherer) workload(ctx context.Context, cl *clusters.Cluster, dir string, vmNamespaces map[string]bool) error {
	c := cl.Client
	if err := g.dump(ctx, cl.Name, c, dir+"/protectiongroups.yaml", &srv1alpha1.ProtectionGroupList{}, client.InNamespace(g.in.Namespace)); err != nil {
		return err
	}
	if err := g.dump(ctx, cl.Name, c, dir+"/volumereplicationgroups.yaml", &drv1alpha1.VolumeReplicationGroupList{}, client.InNamespace(g.in.Namespace)); err != nil {
		return err
	}
	if err := g.dump(ctx, cl.Name, c, dir+"/nodes.yaml", &corev1.NodeList{}); err != nil {
		return err
	}
	if err := g.allocation(ctx, cl, dir+"/drbdallocation.yaml"); err != nil {
		return err
	}
	nss := []string{g.in.Namespace}
	for _, ns := range sortedKeys(vmNamespaces) {
		nss = append(nss, ns)
		for _, l := range []struct {
			file string
			list client.ObjectList
		}{
			{"drbdresources", &srv1alpha1.DRBDResourceList{}},
			{"virtualmachines", &kubevirtv1.VirtualMachineList{}},
			{"virtualmachineinstances", &kubevirtv1.VirtualMachineInstanceList{}},
			{"persistentvolumeclaims", &corev1.PersistentVolumeClaimList{}},
		} {
			if err := g.dump(ctx, cl.Name, c, dir+"/"+ns+"/"+l.file+".yaml", l.list, client.InNamespace(ns)); err != nil {
				return err
			}
		}
	}
	for _, ns := range nss {
		if err := g.events(ctx, cl.Name, c, dir+"/"+ns+"/events.yaml", ns); err != nil {
			return err
		}
	}
	return g.logs(ctx, cl.Name, cl.Config, dir+"/logs", nil, "pg-controller", "drbd-node-agent")
}

// dump writes a list as YAML without managed fields; a kind that cannot be
// read becomes a note.
func (g *gatherer) dump(ctx context.Context, cluster string, c client.Client, path string, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.List(ctx, list, opts...); err != nil {
		if !meta.IsNoMatchError(err) {
			g.b.note("%s: %s: %v", cluster, path, err)
		}
		return nil
	}
	items, _ := meta.ExtractList(list)
	if len(items) == 0 {
		return nil
	}
	for _, it := range items {
		if o, ok := it.(client.Object); ok {
			o.SetManagedFields(nil)
			if gvk, err := apiutil.GVKForObject(o, g.in.Scheme); err == nil {
				o.GetObjectKind().SetGroupVersionKind(gvk)
			}
		}
	}
	var doc any = list
	if u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(list); err == nil && redactGuestData(u, g.b.red) {
		doc = u
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return err
	}
	return g.b.add(path, fmt.Sprintf("%d objects", len(items)), out)
}

// secrets writes the DR namespace's Secrets as metadata and key names only,
// after recording every value for the redactor.
func (g *gatherer) secrets(ctx context.Context) error {
	list := &corev1.SecretList{}
	if err := g.in.Quorum.List(ctx, list, client.InNamespace(g.in.Namespace)); err != nil {
		g.b.note("quorum: Secrets: %v", err)
		return nil
	}
	var sb strings.Builder
	for _, s := range list.Items {
		keys := make([]string, 0, len(s.Data))
		for k, v := range s.Data {
			g.b.red.add(v)
			keys = append(keys, k)
		}
		for _, v := range s.Annotations {
			g.b.red.add([]byte(v))
		}
		sort.Strings(keys)
		fmt.Fprintf(&sb, "- name: %s\n  type: %s\n  keys: [%s]\n  created: %s\n", s.Name, s.Type, strings.Join(keys, ", "), s.CreationTimestamp.UTC().Format(time.RFC3339))
	}
	return g.b.add("quorum/secrets.yaml", "Secrets: names, types and key names only", []byte(sb.String()))
}

// events writes a namespace's events inside the time window.
func (g *gatherer) events(ctx context.Context, cluster string, c client.Client, path, ns string) error {
	list := &corev1.EventList{}
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		g.b.note("%s: events in %s: %v", cluster, ns, err)
		return nil
	}
	cut := time.Time{}
	if g.in.Since > 0 {
		cut = time.Now().Add(-g.in.Since)
	}
	var sb bytes.Buffer
	sort.Slice(list.Items, func(i, j int) bool { return eventTime(&list.Items[i]).Before(eventTime(&list.Items[j])) })
	n := 0
	for i := range list.Items {
		e := &list.Items[i]
		if eventTime(e).Before(cut) {
			continue
		}
		n++
		fmt.Fprintf(&sb, "%s  %-7s %-24s %s/%s: %s (x%d)\n", eventTime(e).UTC().Format(time.RFC3339), e.Type, e.Reason,
			e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message, max(e.Count, 1))
	}
	if n == 0 {
		return nil
	}
	return g.b.add(path, fmt.Sprintf("%d events", n), sb.Bytes())
}

func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// logs writes the logs of the product's pods named by their app label, in the
// given namespaces or (nil) in all.
func (g *gatherer) logs(ctx context.Context, cluster string, cfg *rest.Config, dir string, namespaces []string, names ...string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		g.b.note("%s: logs: %v", cluster, err)
		return nil
	}
	if namespaces == nil {
		namespaces = []string{""}
	}
	for _, ns := range namespaces {
		pods := &corev1.PodList{}
		sel := fmt.Sprintf("%s in (%s)", nameLabel, strings.Join(names, ","))
		list, err := cs.CoreV1().Pods(ns).List(ctx, listOptions(sel))
		if err != nil {
			g.b.note("%s: pods %s: %v (logs not gathered)", cluster, sel, err)
			continue
		}
		pods.Items = list.Items
		for _, p := range pods.Items {
			for _, c := range p.Spec.Containers {
				opts := &corev1.PodLogOptions{Container: c.Name}
				if g.in.Since > 0 {
					s := int64(g.in.Since.Seconds())
					opts.SinceSeconds = &s
				}
				data, err := cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, opts).DoRaw(ctx)
				if err != nil {
					g.b.note("%s: logs of %s/%s %s: %v", cluster, p.Namespace, p.Name, c.Name, err)
					continue
				}
				if err := g.b.add(fmt.Sprintf("%s/%s_%s_%s.log", dir, p.Namespace, p.Name, c.Name), "container log", data); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// addConfig records a client's own credentials for the redactor.
func addConfig(r *redactor, cfg *rest.Config) {
	if cfg == nil {
		return
	}
	for _, v := range [][]byte{[]byte(cfg.BearerToken), []byte(cfg.Password), cfg.KeyData, cfg.CertData} {
		if len(v) > 0 {
			r.add(v)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sinceText(d time.Duration) string {
	if d == 0 {
		return "the beginning"
	}
	return d.String() + " before gathering"
}
