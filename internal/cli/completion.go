package cli

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// completionTimeout bounds a completion's reads: a shell waits on them.
const completionTimeout = 5 * time.Second

// Completion of names from the quorum cluster (cobra's ValidArgsFunction and
// flag completion), in the DR namespace -n or the kubeconfig context names.
// A read that fails completes nothing rather than files.

// completeGroupArg completes a command's first argument, a group.
func (o *Options) completeGroupArg(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return o.completeGroups(cmd, nil, prefix)
}

// completeGroups completes with the DR namespace's ProtectionGroups.
func (o *Options) completeGroups(cmd *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
	return o.complete(cmd, prefix, func(ctx context.Context, c client.Client, ns string) ([]string, error) {
		list := &srv1alpha1.ProtectionGroupList{}
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		out := make([]string, 0, len(list.Items))
		for _, pg := range list.Items {
			out = append(out, pg.Name)
		}
		return out, nil
	})
}

// completeZones completes --zone with the DR namespace's ProtectionZones.
func (o *Options) completeZones(cmd *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
	return o.complete(cmd, prefix, o.zoneNames)
}

func (o *Options) zoneNames(ctx context.Context, c client.Client, ns string) ([]string, error) {
	list := &srv1alpha1.ProtectionZoneList{}
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(list.Items))
	for _, z := range list.Items {
		out = append(out, z.Name)
	}
	return out, nil
}

// completeClusters completes --to with the clusters of the group's zone
// when the group is given (first argument), else of every zone of the DR
// namespace; a failover never targets the cluster the group is active on.
func (o *Options) completeClusters(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	return o.complete(cmd, prefix, func(ctx context.Context, c client.Client, ns string) ([]string, error) {
		zones := &srv1alpha1.ProtectionZoneList{}
		if err := c.List(ctx, zones, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		zone, active := "", ""
		if len(args) > 0 {
			pg := &srv1alpha1.ProtectionGroup{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: args[0]}, pg); err == nil {
				active = pg.Spec.ActiveCluster
				if pg.Spec.ZoneRef != nil {
					zone = pg.Spec.ZoneRef.Name
				}
			}
		}
		var out []string
		for _, z := range zones.Items {
			if zone != "" && z.Name != zone {
				continue
			}
			for _, zc := range z.Spec.Clusters {
				if zc.Name != active && !slices.Contains(out, zc.Name) {
					out = append(out, zc.Name)
				}
			}
		}
		return out, nil
	})
}

// completeProtectedVMs completes unprotect's argument with the VMs of the DR
// namespace's ProtectionRequests, as NAMESPACE/NAME.
func (o *Options) completeProtectedVMs(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return o.complete(cmd, prefix, func(ctx context.Context, c client.Client, ns string) ([]string, error) {
		list := &srv1alpha1.ProtectionRequestList{}
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		var out []string
		for _, pr := range list.Items {
			vm := pr.Spec.VirtualMachine.Namespace + "/" + pr.Spec.VirtualMachine.Name
			if !slices.Contains(out, vm) {
				out = append(out, vm)
			}
		}
		return out, nil
	})
}

// completeValidate completes "validate zone NAME" and "validate group NAME".
func (o *Options) completeValidate(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	switch {
	case len(args) == 0:
		return filterPrefix([]string{"zone", "group"}, prefix), cobra.ShellCompDirectiveNoFileComp
	case len(args) == 1 && args[0] == "zone":
		return o.completeZones(cmd, nil, prefix)
	case len(args) == 1 && args[0] == "group":
		return o.completeGroups(cmd, nil, prefix)
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}

// completeNamespaces completes -n with the namespaces that hold a
// ProtectionZone: the DR namespaces.
func (o *Options) completeNamespaces(cmd *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
	ctx, cancel := context.WithTimeout(contextOf(cmd), completionTimeout)
	defer cancel()
	c, err := o.Quorum()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	nss, err := o.namespaces(ctx, c, true)
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	return filterPrefix(nss, prefix), cobra.ShellCompDirectiveNoFileComp
}

// complete runs list against the quorum cluster in the DR namespace and keeps
// the names that start with prefix.
func (o *Options) complete(cmd *cobra.Command, prefix string, list func(context.Context, client.Client, string) ([]string, error)) ([]string, cobra.ShellCompDirective) {
	ctx, cancel := context.WithTimeout(contextOf(cmd), completionTimeout)
	defer cancel()
	c, ns, err := o.inNamespace()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	names, err := list(ctx, c, ns)
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	return filterPrefix(names, prefix), cobra.ShellCompDirectiveNoFileComp
}

func filterPrefix(names []string, prefix string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}

func contextOf(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
