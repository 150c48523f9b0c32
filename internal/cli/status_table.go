package cli

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// table prints the report as four tables (clusters, groups, VMs by cluster,
// replication) and the notes that go with them. With -A the tables of every
// DR namespace are merged, with a NAMESPACE column first, as kubectl get -A.
func (r *StatusReport) table(w io.Writer, opts printers.PrintOptions, all bool) error {
	if all {
		return statusTables(w, r.Namespaces, opts, true)
	}
	for i, n := range r.Namespaces {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if !opts.NoHeaders {
			fmt.Fprintf(w, "DR namespace %s\n\n", n.Namespace)
		}
		if err := statusTables(w, []NamespaceStatus{n}, opts, false); err != nil {
			return err
		}
	}
	return nil
}

func statusTables(w io.Writer, nss []NamespaceStatus, opts printers.PrintOptions, all bool) error {
	// cols prefixes NAMESPACE under -A; row prefixes the namespace's cell.
	cols := func(h ...string) []string {
		if all {
			return append([]string{"NAMESPACE"}, h...)
		}
		return h
	}
	row := func(t *table, ns string, cells ...string) {
		if all {
			cells = append([]string{ns}, cells...)
		}
		t.row(cells...)
	}
	var notes []string
	groups := 0
	t := newTable(w, cols("ZONE", "CLUSTER", "ROLE", "REACHABLE", "VERSION", "CLI ACCESS")...).wideColumns("BACKEND", "ZONE READY", "MESSAGE").with(opts)
	for _, n := range nss {
		groups += len(n.Groups)
		for _, z := range n.Zones {
			for _, c := range z.Clusters {
				row(t, n.Namespace, z.Name, c.Name, c.Role, c.Reachable, c.Version, c.Access, z.Backend, z.Ready, c.Message)
				if c.AccessNote != "" {
					notes = append(notes, fmt.Sprintf("%s: %s; showing the quorum cluster's view", nsPrefix(all, n.Namespace)+c.Name, c.AccessNote))
				}
			}
		}
	}
	if err := t.flush(); err != nil {
		return err
	}
	for _, note := range notes {
		fmt.Fprintln(w, "  note:", note)
	}
	if groups == 0 {
		fmt.Fprintln(w, "\nno ProtectionGroup")
		return nil
	}
	fmt.Fprintln(w)
	t = newTable(w, cols("GROUP", "ACTIVE", "STATE", "HEALTH", "FAILOVER-READY", "LAG/RPO", "RPO-EVENTS", "REQUEST", "LOCK")...).wideColumns("ZONE", "VMS").with(opts)
	for _, n := range nss {
		for _, g := range n.Groups {
			var reqs []string
			for _, rq := range g.Requests {
				reqs = append(reqs, rq.Kind+"/"+rq.Name+" "+rq.Phase)
			}
			lag := fmt.Sprintf("%ds/%ds", g.MaxLagSeconds, g.RPOSeconds)
			if !g.RPOMet {
				lag += " BREACH"
			}
			row(t, n.Namespace, g.Name, g.ActiveCluster, g.CurrentState, g.Health, strconv.FormatBool(g.FailoverReady), lag,
				strings.Join(g.OpenRPOEvents, ","), strings.Join(reqs, ","), g.LockHolder, g.Zone, strconv.Itoa(len(g.VMs)))
		}
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	t = newTable(w, cols("GROUP", "VM", "STATE BY CLUSTER")...).with(opts)
	for _, n := range nss {
		for _, g := range n.Groups {
			for _, vm := range g.VMs {
				row(t, n.Namespace, g.Name, vm.Namespace+"/"+vm.Name, byCluster(vm.Clusters))
			}
		}
	}
	if err := t.flush(); err != nil {
		return err
	}
	if err := drillTable(w, nss, opts, all, cols, row); err != nil {
		return err
	}
	fmt.Fprintln(w)
	t = newTable(w, cols("GROUP", "VM", "VOL", "CONNECTION", "DISK", "PEER-DISK", "REPLICATION", "IN-SYNC%", "LAG")...).with(opts)
	for _, n := range nss {
		for _, g := range n.Groups {
			for _, v := range g.Replication {
				row(t, n.Namespace, g.Name, v.VM, strconv.Itoa(int(v.Volume)), v.ConnectionState, v.DiskState, v.PeerDiskState,
					v.ReplicationState, v.PercentInSync, fmt.Sprintf("%ds", v.LagSeconds))
			}
		}
	}
	if err := t.flush(); err != nil {
		return err
	}
	for _, n := range nss {
		for _, g := range n.Groups {
			for _, rq := range g.Requests {
				if rq.Message != "" {
					fmt.Fprintf(w, "  %s%s/%s: %s\n", nsPrefix(all, n.Namespace), rq.Kind, rq.Name, rq.Message)
				}
				for _, line := range bootLines(rq.BootStages) {
					fmt.Fprintf(w, "    %s%s/%s %s\n", nsPrefix(all, n.Namespace), rq.Kind, rq.Name, line)
				}
			}
		}
	}
	return nil
}

func nsPrefix(all bool, ns string) string {
	if all {
		return ns + "/"
	}
	return ""
}

// printNames prints the report's groups for -o name, one
// protectiongroup.siterecovery.trilio.io/NAME a line.
func (r *StatusReport) printNames(w io.Writer, pf *printFlags) error {
	for _, n := range r.Namespaces {
		for _, g := range n.Groups {
			obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: n.Namespace, Name: g.Name}}
			obj.SetGroupVersionKind(srv1alpha1.GroupVersion.WithKind("ProtectionGroup"))
			if err := pf.printObj(obj, w); err != nil {
				return err
			}
		}
	}
	return nil
}

func byCluster(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, " ")
}
