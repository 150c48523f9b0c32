package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// vmRef parses NAMESPACE/NAME, or NAME in --vm-namespace.
func vmRef(arg, defaultNS string) (srv1alpha1.VirtualMachineReference, error) {
	ns, name, ok := strings.Cut(arg, "/")
	if !ok {
		ns, name = defaultNS, arg
	}
	if ns == "" || name == "" {
		return srv1alpha1.VirtualMachineReference{}, usagef("VM %q: give NAMESPACE/NAME or --vm-namespace", arg)
	}
	return srv1alpha1.VirtualMachineReference{Namespace: ns, Name: name}, nil
}

// protectionRequestName is the name protect gives a VM's ProtectionRequest.
func protectionRequestName(vm srv1alpha1.VirtualMachineReference) string {
	return "protect-" + vm.Namespace + "-" + vm.Name
}

func newProtectCommand(o *Options) *cobra.Command {
	var group, zone, vmNS, target string
	var wait bool
	var timeout time.Duration
	wf := newWriteFlags()
	cmd := &cobra.Command{
		Use:   "protect [NAMESPACE/]VM --group GROUP",
		Short: "Protect a VM of the primary cluster (creates a ProtectionRequest)",
		Long: `protect creates a ProtectionRequest: the VM's disks get a DRBD replica on the
DR cluster and the VM joins the group, which is created if missing. --zone may
be left out when the DR namespace has one zone.

With --wait it streams the request's phases until the VM is Protected (or the
request failed) and ends with the timeline; Ctrl-C stops waiting, not the
protection.`,
		Example: `  kubectl siterecovery protect apps/web-01 --group production-pg -n dr-production --wait
  kubectl siterecovery protect web-01 --vm-namespace apps --group production-pg --zone production
  kubectl siterecovery protect apps/web-01 --group production-pg --dry-run=server`,
		Args:    exactArgs(1),
		PreRunE: func(*cobra.Command, []string) error { return wf.check(wait) },
		RunE: func(cmd *cobra.Command, args []string) error {
			if group == "" {
				return usagef("--group is required")
			}
			ref, err := vmRef(args[0], vmNS)
			if err != nil {
				return err
			}
			return o.protect(cmd.Context(), ref, protectTarget{group: group, zone: zone, cluster: target}, wait, timeout, wf)
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "stream the phases until the VM is protected or the request failed")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "with --wait, stop waiting after this long (the protection goes on)")
	cmd.Flags().StringVar(&group, "group", "", "the ProtectionGroup the VM joins")
	cmd.Flags().StringVar(&zone, "zone", "", "the ProtectionZone; defaults to the DR namespace's only zone")
	cmd.Flags().StringVar(&vmNS, "vm-namespace", "", "the VM's namespace on the workload cluster, when VM has no NAMESPACE/")
	cmd.Flags().StringVar(&target, "to", "", "the DR cluster for the replica; defaults to the zone's only DR cluster")
	wf.addFlags(cmd)
	_ = cmd.RegisterFlagCompletionFunc("group", o.completeGroups)
	_ = cmd.RegisterFlagCompletionFunc("zone", o.completeZones)
	_ = cmd.RegisterFlagCompletionFunc("to", o.completeClusters)
	return cmd
}

// protectTarget is where protect puts a VM: its group, zone and DR cluster.
type protectTarget struct{ group, zone, cluster string }

func (o *Options) protect(ctx context.Context, vm srv1alpha1.VirtualMachineReference, to protectTarget, wait bool, timeout time.Duration, wf *writeFlags) error {
	zone := to.zone
	c, ns, err := o.inNamespace()
	if err != nil {
		return err
	}
	if zone == "" {
		zones := &srv1alpha1.ProtectionZoneList{}
		if err := c.List(ctx, zones, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(zones.Items) != 1 {
			return usagef("DR namespace %s has %d zones: name one with --zone", ns, len(zones.Items))
		}
		zone = zones.Items[0].Name
	}
	pr := &srv1alpha1.ProtectionRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: protectionRequestName(vm), Annotations: o.auditAnnotations(ctx, "")},
		Spec: srv1alpha1.ProtectionRequestSpec{
			VirtualMachine:     vm,
			ZoneRef:            srv1alpha1.LocalObjectReference{Name: zone},
			ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: to.group},
			TargetCluster:      to.cluster,
		},
	}
	if wf.send() {
		if err := c.Create(ctx, pr, wf.createOptions()...); err != nil {
			return err
		}
	}
	if wf.dryRun == dryRunNone {
		fmt.Fprintf(o.ErrOut, "created ProtectionRequest %s/%s: %s/%s joins %s in zone %s\n", ns, pr.Name, vm.Namespace, vm.Name, to.group, zone)
	}
	if !wait {
		return wf.done(o, pr, "created")
	}
	return o.waitProtection(ctx, c, pr, timeout, wf.print)
}

// waitProtection streams a ProtectionRequest's phases until it is Protected or
// Failed, and prints its timeline.
func (o *Options) waitProtection(ctx context.Context, c client.Client, pr *srv1alpha1.ProtectionRequest, timeout time.Duration, pf *printFlags) error {
	p := &progress{w: o.stream(pf)}
	err := poll(ctx, timeout, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(pr), pr); err != nil {
			return false, err
		}
		p.update(pr.Status.PhaseHistory, "")
		return pr.Status.Phase == srv1alpha1.ProtectionProtected || pr.Status.Phase == srv1alpha1.ProtectionFailed, nil
	})
	if err != nil {
		return stillRunning(err, "ProtectionRequest", pr.Namespace, pr.Name, string(pr.Status.Phase))
	}
	// completionTime has whole seconds, the phases finer times: the request
	// ended with its last phase.
	end := time.Now()
	if h := pr.Status.PhaseHistory; len(h) > 0 {
		end = h[len(h)-1].Time.Time
	}
	if pf.human() {
		fmt.Fprintf(o.Out, "\nTimeline of ProtectionRequest %s (%s):\n", pr.Name, pr.Status.Phase)
		timeline(o.Out, pr.Status.PhaseHistory, end)
	} else if err := pf.printObj(pr, o.Out); err != nil {
		return err
	}
	if pr.Status.Phase == srv1alpha1.ProtectionFailed {
		return exitf(ExitRequestFailed, "ProtectionRequest %s/%s failed: %s", pr.Namespace, pr.Name, lastMessage(pr.Status.PhaseHistory))
	}
	return nil
}

func newUnprotectCommand(o *Options) *cobra.Command {
	var vmNS, confirm string
	var force bool
	wf := newWriteFlags()
	cmd := &cobra.Command{
		Use:   "unprotect [NAMESPACE/]VM",
		Short: "Stop protecting a VM (deletes its ProtectionRequest)",
		Long: `unprotect deletes the VM's ProtectionRequest; the protection flow removes the
replica and leaves the VM running on its original disks. While the group runs on
the DR cluster the removal waits for a failback; --force removes replication
and leaves the VM running on the DR cluster, on its DR disks, and its disks on
the primary cluster out of date with no failback: it needs --confirm with the
VM's name and the siterecovery-disaster-operator role.`,
		Example: `  kubectl siterecovery unprotect apps/web-01 -n dr-production
  kubectl siterecovery unprotect apps/web-01 --force --confirm web-01
  kubectl siterecovery unprotect apps/web-01 --force --confirm web-01 --dry-run=server`,
		Args:              exactArgs(1),
		ValidArgsFunction: o.completeProtectedVMs,
		PreRunE:           func(*cobra.Command, []string) error { return wf.check(false) },
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := vmRef(args[0], vmNS)
			if err != nil {
				return err
			}
			if force && confirm != ref.Name {
				return usagef("a forced unprotect leaves VM %s/%s on the DR cluster without replication and its disks on the primary cluster out of date, with no failback: confirm with --confirm %s (needs the siterecovery-disaster-operator role)",
					ref.Namespace, ref.Name, ref.Name)
			}
			return o.unprotect(cmd.Context(), ref, force, wf)
		},
	}
	wf.addFlags(cmd)
	cmd.Flags().StringVar(&vmNS, "vm-namespace", "", "the VM's namespace on the workload cluster, when VM has no NAMESPACE/")
	cmd.Flags().BoolVar(&force, "force", false, "unprotect even while the group runs on the DR cluster; the VM stays there")
	cmd.Flags().StringVar(&confirm, "confirm", "", "the VM's name, required with --force")
	return cmd
}

// unprotect deletes the VM's ProtectionRequests. With force it first sets,
// in one write, the force-unprotect annotation and the typed confirmation
// (the VM's name) that the protectionzone chart's admission policy asks for.
func (o *Options) unprotect(ctx context.Context, vm srv1alpha1.VirtualMachineReference, force bool, wf *writeFlags) error {
	c, ns, err := o.inNamespace()
	if err != nil {
		return err
	}
	prs := &srv1alpha1.ProtectionRequestList{}
	if err := c.List(ctx, prs, client.InNamespace(ns)); err != nil {
		return err
	}
	var found []srv1alpha1.ProtectionRequest
	for _, pr := range prs.Items {
		if pr.Spec.VirtualMachine == vm {
			found = append(found, pr)
		}
	}
	if len(found) == 0 {
		return fmt.Errorf("no ProtectionRequest for VM %s/%s in DR namespace %s", vm.Namespace, vm.Name, ns)
	}
	for i := range found {
		pr := &found[i]
		if force {
			patch := client.MergeFrom(pr.DeepCopy())
			if pr.Annotations == nil {
				pr.Annotations = map[string]string{}
			}
			pr.Annotations[srv1alpha1.ForceUnprotectAnnotation] = "true"
			pr.Annotations[srv1alpha1.ConfirmAnnotation] = vm.Name
			if wf.send() {
				if err := c.Patch(ctx, pr, patch, wf.patchOptions()...); err != nil {
					return err
				}
			}
		}
		if wf.send() {
			if err := c.Delete(ctx, pr, wf.deleteOptions()...); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
		if wf.dryRun == dryRunNone {
			fmt.Fprintf(o.ErrOut, "deleted ProtectionRequest %s/%s: the protection flow now removes the replica of %s/%s\n", ns, pr.Name, vm.Namespace, vm.Name)
		}
		if err := wf.done(o, pr, "deleted"); err != nil {
			return err
		}
	}
	return nil
}
