package cli

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

func (r *StatusReport) table(w io.Writer) error {
	for i, n := range r.Namespaces {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "DR namespace %s\n\n", n.Namespace)
		t := newTable(w, "ZONE", "CLUSTER", "ROLE", "REACHABLE", "VERSION", "CLI ACCESS")
		var notes []string
		for _, z := range n.Zones {
			for _, c := range z.Clusters {
				t.row(z.Name, c.Name, c.Role, c.Reachable, c.Version, c.Access)
				if c.AccessNote != "" {
					notes = append(notes, fmt.Sprintf("%s: %s; showing the quorum cluster's view", c.Name, c.AccessNote))
				}
			}
		}
		if err := t.flush(); err != nil {
			return err
		}
		for _, note := range notes {
			fmt.Fprintln(w, "  note:", note)
		}
		if len(n.Groups) == 0 {
			fmt.Fprintln(w, "\nno ProtectionGroup")
			continue
		}
		fmt.Fprintln(w)
		t = newTable(w, "GROUP", "ACTIVE", "STATE", "HEALTH", "FAILOVER-READY", "LAG/RPO", "RPO-EVENTS", "REQUEST", "LOCK")
		for _, g := range n.Groups {
			var reqs []string
			for _, rq := range g.Requests {
				reqs = append(reqs, rq.Kind+"/"+rq.Name+" "+rq.Phase)
			}
			lag := fmt.Sprintf("%ds/%ds", g.MaxLagSeconds, g.RPOSeconds)
			if !g.RPOMet {
				lag += " BREACH"
			}
			t.row(g.Name, g.ActiveCluster, g.CurrentState, g.Health, strconv.FormatBool(g.FailoverReady), lag,
				strings.Join(g.OpenRPOEvents, ","), strings.Join(reqs, ","), g.LockHolder)
		}
		if err := t.flush(); err != nil {
			return err
		}
		fmt.Fprintln(w)
		t = newTable(w, "GROUP", "VM", "STATE BY CLUSTER")
		for _, g := range n.Groups {
			for _, vm := range g.VMs {
				t.row(g.Name, vm.Namespace+"/"+vm.Name, byCluster(vm.Clusters))
			}
		}
		if err := t.flush(); err != nil {
			return err
		}
		fmt.Fprintln(w)
		t = newTable(w, "GROUP", "VM", "VOL", "CONNECTION", "DISK", "PEER-DISK", "REPLICATION", "IN-SYNC%", "LAG")
		for _, g := range n.Groups {
			for _, v := range g.Replication {
				t.row(g.Name, v.VM, strconv.Itoa(int(v.Volume)), v.ConnectionState, v.DiskState, v.PeerDiskState,
					v.ReplicationState, v.PercentInSync, fmt.Sprintf("%ds", v.LagSeconds))
			}
		}
		if err := t.flush(); err != nil {
			return err
		}
		for _, g := range n.Groups {
			for _, rq := range g.Requests {
				if rq.Message != "" {
					fmt.Fprintf(w, "  %s/%s: %s\n", rq.Kind, rq.Name, rq.Message)
				}
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
