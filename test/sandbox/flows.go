package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// protectAll creates a ProtectionRequest per demo VM and waits until each is
// Protected, printing every phase as it is entered.
func (sb *sandbox) protectAll(ctx context.Context) error {
	vms := make([]string, sb.o.vms)
	for i := range vms {
		vms[i] = fmt.Sprintf("vm-%d", i+1)
	}
	return sb.protect(ctx, groupName, vms, "")
}

// protect creates a ProtectionRequest per VM of appNS into group (the
// group's first request creates it, with protocol; empty is the default, A)
// and waits until each is Protected, printing every phase as it is entered.
func (sb *sandbox) protect(ctx context.Context, group string, vms []string, protocol srv1alpha1.ReplicationProtocol) error {
	q := sb.zone.Clusters["quorum"].Client
	mine := map[string]bool{}
	for _, vm := range vms {
		mine["protect-"+vm] = true
		if err := q.Create(ctx, &srv1alpha1.ProtectionRequest{
			ObjectMeta: metav1.ObjectMeta{Namespace: drNamespace, Name: "protect-" + vm},
			Spec: srv1alpha1.ProtectionRequestSpec{
				VirtualMachine:     srv1alpha1.VirtualMachineReference{Name: vm, Namespace: appNS},
				ZoneRef:            srv1alpha1.LocalObjectReference{Name: zoneName},
				ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: group},
				TargetCluster:      dr,
				Protocol:           protocol,
			},
		}); err != nil {
			return err
		}
	}
	seen := map[string]int{}
	return poll(ctx, 5*time.Minute, func() (bool, error) {
		list := &srv1alpha1.ProtectionRequestList{}
		if err := q.List(ctx, list, client.InNamespace(drNamespace)); err != nil {
			return false, err
		}
		done := 0
		for _, pr := range list.Items {
			if !mine[pr.Name] {
				continue
			}
			for _, h := range pr.Status.PhaseHistory[seen[pr.Name]:] {
				say("%-16s %-22s %s", pr.Name, h.Phase, h.Message)
			}
			seen[pr.Name] = len(pr.Status.PhaseHistory)
			switch pr.Status.Phase {
			case srv1alpha1.ProtectionProtected:
				done++
			case srv1alpha1.ProtectionFailed:
				return false, fmt.Errorf("%s failed: %s", pr.Name, lastMessage(pr.Status.PhaseHistory))
			}
		}
		return done == len(mine), nil
	})
}

// failover runs one FailoverRequest of the demo group to its end and prints
// its timeline.
func (sb *sandbox) failover(ctx context.Context, name, target string, typ srv1alpha1.FailoverType) error {
	return sb.failoverGroup(ctx, groupName, name, target, typ)
}

// failoverGroup runs one FailoverRequest of group to its end and prints its
// timeline.
func (sb *sandbox) failoverGroup(ctx context.Context, group, name, target string, typ srv1alpha1.FailoverType) error {
	q := sb.zone.Clusters["quorum"].Client
	fr := &srv1alpha1.FailoverRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: drNamespace, Name: name},
		Spec: srv1alpha1.FailoverRequestSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: group},
			TargetCluster: target, FailoverType: typ, DrainTimeoutSeconds: 120, BatchBootTimeoutSeconds: 300},
	}
	if typ == srv1alpha1.FailoverUnplanned {
		// Typing the group's name confirms a failover that may lose writes.
		fr.Annotations = map[string]string{srv1alpha1.ConfirmAnnotation: group}
	}
	created := time.Now()
	if err := q.Create(ctx, fr); err != nil {
		return err
	}
	say("FailoverRequest %s: %s failover of %s to %s", name, typ, group, target)
	err := poll(ctx, 5*time.Minute, func() (bool, error) {
		if err := q.Get(ctx, client.ObjectKeyFromObject(fr), fr); err != nil {
			return false, err
		}
		return fr.Status.CompletionTime != nil, nil
	})
	if err != nil {
		return err
	}
	printTimeline(created, fr)
	if fr.Status.Phase != srv1alpha1.FailoverCompleted {
		return fmt.Errorf("%s ended %s: %s", name, fr.Status.Phase, fr.Status.Message)
	}
	return nil
}

// demoWrites is how many blocks each demo VM's guest writes before a failover.
const demoWrites = 64

// demoVMs names the demo VMs.
func (sb *sandbox) demoVMs() []types.NamespacedName {
	vms := make([]types.NamespacedName, sb.o.vms)
	for i := range vms {
		vms[i] = types.NamespacedName{Namespace: appNS, Name: fmt.Sprintf("vm-%d", i+1)}
	}
	return vms
}

// guestsWrite makes each demo VM's guest write demoWrites blocks on cluster,
// where the VMs run.
func (sb *sandbox) guestsWrite(ctx context.Context, cluster string) error {
	for _, vm := range sb.demoVMs() {
		ack, err := sb.guests.Write(ctx, cluster, vm, demoWrites)
		if err != nil {
			return fmt.Errorf("guest %s on %s: %w", vm, cluster, err)
		}
		say("guest %s on %s: %d writes acknowledged (last sequence %d)", vm, cluster, ack.Acknowledged, ack.LastSeq)
	}
	return nil
}

// guestsVerify reads each demo VM's disks back on cluster and prints what it
// found. A corrupt block always fails the demo; a lost write fails it unless
// the failover was unplanned, where protocol A may lose writes in flight.
func (sb *sandbox) guestsVerify(ctx context.Context, cluster string, unplanned bool) error {
	fmt.Println()
	var bad []string
	for _, vm := range sb.demoVMs() {
		res, err := sb.guests.Verify(ctx, cluster, vm)
		if err != nil {
			return fmt.Errorf("verifying guest %s on %s: %w", vm, cluster, err)
		}
		fmt.Printf("  guest %s on %s: %s\n", vm, cluster, res)
		if res.Corrupt > 0 || (res.Lost > 0 && !unplanned) {
			bad = append(bad, fmt.Sprintf("%s: %s", vm, res))
		}
	}
	fmt.Println()
	if len(bad) > 0 {
		return fmt.Errorf("guest data not intact on %s: %s", cluster, strings.Join(bad, "; "))
	}
	return nil
}

func printTimeline(created time.Time, fr *srv1alpha1.FailoverRequest) {
	h := fr.Status.PhaseHistory
	fmt.Printf("\n  timeline of %s (created %s)\n", fr.Name, created.Format("15:04:05.000"))
	for i, p := range h {
		took := ""
		if i+1 < len(h) {
			took = h[i+1].Time.Sub(p.Time.Time).Round(time.Millisecond).String()
		}
		fmt.Printf("  %s  %-17s %8s  %s\n", p.Time.Format("15:04:05.000"), p.Phase, took, p.Message)
	}
	for _, c := range fr.Status.Conditions {
		if c.Type == srv1alpha1.ConditionDataLossRisk {
			fmt.Printf("  %s: %s\n", c.Type, c.Message)
		}
	}
	printBootStages(fr)
	fmt.Printf("  total %s\n\n", h[len(h)-1].Time.Sub(created).Round(time.Millisecond))
}

// demo runs a test failover, a planned failover and failback, an unplanned failover through a
// partition of the primary site and its rejoin, then an unplanned failover
// back after a power cut of the DR site and its rejoin, verifying the guests'
// data after each, then the worked example (example.go).
func (sb *sandbox) demo(ctx context.Context) error {
	// While the DR replicas are UpToDate, as a test boots only those: the
	// guests' protocol A writes below drain to the DR site slowly.
	if err := sb.testFailover(ctx); err != nil {
		return err
	}
	if err := sb.guestsWrite(ctx, primary); err != nil {
		return err
	}
	if err := sb.setBootPlan(ctx); err != nil {
		return err
	}
	if err := sb.failover(ctx, "planned-to-dr", dr, srv1alpha1.FailoverPlanned); err != nil {
		return err
	}
	if err := sb.guestsVerify(ctx, dr, false); err != nil {
		return err
	}
	if err := sb.guestsWrite(ctx, dr); err != nil {
		return err
	}
	if err := sb.failover(ctx, "failback-to-primary", primary, srv1alpha1.FailoverPlanned); err != nil {
		return err
	}
	if err := sb.guestsVerify(ctx, primary, false); err != nil {
		return err
	}
	if err := sb.guestsWrite(ctx, primary); err != nil {
		return err
	}
	say("simulating a partition of the primary site: quorum-manager and the DR site lose it; its VMs run on")
	faults := &sandboxFaults{sb: sb, stopped: map[string]bool{}}
	if err := faults.Partition(primary); err != nil {
		return err
	}
	if err := sb.failover(ctx, "disaster-to-dr", dr, srv1alpha1.FailoverUnplanned); err != nil {
		return err
	}
	if err := sb.guestsVerify(ctx, dr, true); err != nil {
		return err
	}
	if err := sb.guestsWrite(ctx, dr); err != nil {
		return err
	}
	say("the partition heals: the primary is stopped there, its diverged writes discarded, and it resyncs from the DR site")
	healed := time.Now()
	if err := faults.Heal(); err != nil {
		return err
	}
	if err := sb.waitRejoined(ctx, healed); err != nil {
		return err
	}
	if err := sb.guestsVerify(ctx, dr, true); err != nil {
		return err
	}
	say("a power cut takes the DR site, where the VMs run now: its API server, pg-controller, agent, DRBD and VMs stop at once")
	if err := faults.PowerOff(dr); err != nil {
		return err
	}
	if err := sb.failover(ctx, "outage-to-primary", primary, srv1alpha1.FailoverUnplanned); err != nil {
		return err
	}
	if err := sb.guestsVerify(ctx, primary, true); err != nil {
		return err
	}
	say("the DR site's power returns: it boots, its VMs are kept stopped, and it rejoins from the primary")
	healed = time.Now()
	if err := faults.Heal(); err != nil {
		return err
	}
	if err := sb.waitRejoined(ctx, healed); err != nil {
		return err
	}
	if err := sb.guestsVerify(ctx, primary, true); err != nil {
		return err
	}
	// Last, with both sites up, so that its output ends the demo.
	if err := sb.example(ctx); err != nil {
		return fmt.Errorf("worked example: %w", err)
	}
	say("demo complete; logs in %s", sb.o.workDir+"/logs")
	return nil
}

// waitRejoined waits until a site fenced off after since has rejoined:
// the group's Diverged condition turned False after since. It prints the
// condition's message, which says how much diverged there.
func (sb *sandbox) waitRejoined(ctx context.Context, since time.Time) error {
	var diverged string
	if err := poll(ctx, 3*time.Minute, func() (bool, error) {
		pg := &srv1alpha1.ProtectionGroup{}
		if err := sb.zone.Clusters["quorum"].Client.Get(ctx, client.ObjectKey{Namespace: drNamespace, Name: groupName}, pg); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(pg.Status.Conditions, srv1alpha1.ConditionDiverged)
		if c == nil || c.Status != metav1.ConditionFalse || c.LastTransitionTime.Time.Before(since.Truncate(time.Second)) {
			return false, nil
		}
		diverged = c.Message
		return true, nil
	}); err != nil {
		return fmt.Errorf("waiting for the fenced-off site to rejoin: %w", err)
	}
	fmt.Printf("\n  Diverged=False: %s\n", diverged)
	return nil
}

func (sb *sandbox) printHelp() {
	var b strings.Builder
	fmt.Fprintf(&b, "\nThe zone is running. Kubeconfigs:\n")
	for _, c := range []string{"quorum", primary, dr} {
		fmt.Fprintf(&b, "  %-8s %s\n", c, sb.kubeconfig(c))
	}
	fmt.Fprintf(&b, `
Try:
  export KUBECONFIG=%[1]s
  kubectl -n %[2]s get protectionzones,protectiongroups,protectionrequests,replicationgroupstatuses
  kubectl -n %[2]s get protectiongroup %[3]s -o yaml
  kubectl --kubeconfig %[4]s -n %[5]s get vm,drbdresources
  kubectl create -f - <<YAML
apiVersion: siterecovery.trilio.io/v1alpha1
kind: FailoverRequest
metadata: {name: my-failover, namespace: %[2]s}
spec: {protectionGroupRef: {name: %[3]s}, targetCluster: %[6]s, failoverType: planned}
YAML
  kubectl -n %[2]s get failoverrequest my-failover -w
An unplanned failover must be confirmed with the group's name; without it the
API server's admission policy refuses it and says how:
  kubectl create -f - <<YAML
apiVersion: siterecovery.trilio.io/v1alpha1
kind: FailoverRequest
metadata: {name: disaster, namespace: %[2]s}
spec: {protectionGroupRef: {name: %[3]s}, targetCluster: %[6]s, failoverType: unplanned}
YAML
Logs of every process: %[7]s/logs
Control API (simulated guests and faults; see README.md): %[8]s
  curl -X POST -d '{"blocks": 64}' %[8]s/v1/guests/%[9]s/%[5]s/vm-1/write
  curl %[8]s/v1/guests/%[9]s/%[5]s/vm-1/verify
  curl -X POST -d '{"cluster": "%[9]s", "cut": true}' %[8]s/v1/faults/links
  curl -X POST -d '{"cluster": "%[9]s"}' %[8]s/v1/faults/partition
  curl -X POST %[8]s/v1/faults/heal
`, sb.kubeconfig("quorum"), drNamespace, groupName, sb.kubeconfig(dr), appNS, dr, sb.o.workDir, sb.controlURL, primary)
	if sb.vs != nil {
		fmt.Fprintf(&b, `The VolSync zone (DR namespace %[1]s):
  kubectl -n %[1]s get drpc,drpolicies,protectiongroups,failoverrequests
  kubectl --kubeconfig %[2]s -n %[3]s get replicationgroupsources,volumegroupsnapshots,replicationsources
`, vsNamespace, sb.kubeconfig(primary), vsAppNS)
	}
	if sb.of != nil {
		b.WriteString(sb.offloadedHelp())
	}
	fmt.Print(b.String())
}

func lastMessage(h []srv1alpha1.PhaseTransition) string {
	if len(h) == 0 {
		return ""
	}
	return h[len(h)-1].Message
}

// poll calls cond every 100ms until it is done, fails, or timeout passes.
func poll(ctx context.Context, timeout time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		done, err := cond()
		if err != nil || done {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
