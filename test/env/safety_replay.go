package env

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	replicationv1alpha1 "github.com/csi-addons/kubernetes-csi-addons/api/replication.storage/v1alpha1"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
)

// replay finds, in one cluster's events: a VRG asked to become, or reporting,
// secondary while a VMI mounts its application's PVC; a VGR asked to become
// secondary while a VMI mounts a PVC of its group; a VMI starting on a PVC
// whose group's VGR exists but is not primary.
func replay(evs []safetyEvent) []string {
	slices.SortStableFunc(evs, func(a, b safetyEvent) int { return cmp.Compare(a.rv, b.rv) })
	r := &replayer{vrgs: map[string]safetyEvent{}, vgrs: map[string]safetyEvent{}, vmis: map[string][]string{}}
	for _, ev := range evs {
		switch ev.kind {
		case "VMI":
			r.vmi(ev)
		case "VRG":
			r.vrg(ev)
		case "VGR":
			r.vgr(ev)
		}
	}
	return r.out
}

// replayer is the state of a cluster at one resourceVersion.
type replayer struct {
	vrgs map[string]safetyEvent // by namespace/name
	vgrs map[string]safetyEvent // by name, which is the group's
	vmis map[string][]string    // claims of the running VMIs
	out  []string
}

func (r *replayer) vmi(ev safetyEvent) {
	_, running := r.vmis[ev.key]
	if ev.deleted {
		delete(r.vmis, ev.key)
		return
	}
	r.vmis[ev.key] = ev.claims
	if running {
		return
	}
	for _, v := range r.vrgs {
		if v.group == "" || !slices.Contains(ev.claims, claimOf(v)) {
			continue
		}
		if g, ok := r.vgrs[v.group]; ok && (g.spec != string(replicationv1alpha1.Primary) || g.status != string(replicationv1alpha1.PrimaryState)) {
			r.out = append(r.out, fmt.Sprintf("VMI %s started on %s while VGR %s is spec %q, status %q (rv %d)", ev.key, claimOf(v), g.key, g.spec, g.status, ev.rv))
		}
	}
}

func (r *replayer) vrg(ev safetyEvent) {
	prev, had := r.vrgs[ev.key]
	if ev.deleted {
		delete(r.vrgs, ev.key)
		return
	}
	r.vrgs[ev.key] = ev
	u := r.users(claimOf(ev))
	if len(u) == 0 {
		return
	}
	if ev.spec == string(drv1alpha1.Secondary) && (!had || prev.spec != ev.spec) {
		r.out = append(r.out, fmt.Sprintf("VRG %s asked to become secondary while %v run (rv %d)", ev.key, u, ev.rv))
	}
	if ev.status == string(drv1alpha1.SecondaryState) && (!had || prev.status != ev.status) {
		r.out = append(r.out, fmt.Sprintf("VRG %s reported Secondary while %v run (rv %d)", ev.key, u, ev.rv))
	}
}

func (r *replayer) vgr(ev safetyEvent) {
	name := nameOf(ev.key)
	prev, had := r.vgrs[name]
	if ev.deleted {
		delete(r.vgrs, name)
		return
	}
	r.vgrs[name] = ev
	if ev.spec != string(replicationv1alpha1.Secondary) || (had && prev.spec == ev.spec) {
		return
	}
	var claims []string
	for _, v := range r.vrgs {
		if v.group == name {
			claims = append(claims, claimOf(v))
		}
	}
	if u := r.users(claims...); len(u) > 0 {
		r.out = append(r.out, fmt.Sprintf("VGR %s asked to become secondary while %v run (rv %d)", ev.key, u, ev.rv))
	}
}

// users are the running VMIs that mount one of claims.
func (r *replayer) users(claims ...string) []string {
	var out []string
	for vmi, mounts := range r.vmis {
		for _, c := range mounts {
			if slices.Contains(claims, c) {
				out = append(out, vmi)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// claimOf is the namespace/claim of a VRG's application.
func claimOf(v safetyEvent) string { return namespaceOf(v.key) + "/" + AppPVCName(v.app) }

func namespaceOf(key string) string { ns, _, _ := strings.Cut(key, "/"); return ns }

func nameOf(key string) string { _, name, _ := strings.Cut(key, "/"); return name }
