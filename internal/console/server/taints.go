package server

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

const taintCheckName = "Taint conflicts"

// taintCheck reads the target cluster as the failover controller will: the
// nodes that hold the group's replicas there, whether they carry the DRBD
// lost-quorum taint, and which other groups of the namespace run on that
// cluster. A tainted node beside another running group makes the controller
// hold the failover (it removes that taint only with force), so the preflight
// says so before the user confirms. A user who may not read the target's
// kubeconfig Secret is told the check was not made, and why.
func (s *Server) taintCheck(ctx context.Context, r request, z *srv1alpha1.ProtectionZone, group, target string) preflightCheck {
	if z == nil {
		return preflightCheck{Name: taintCheckName, Unknown: true, Message: "not checked: the group's zone is not visible to you"}
	}
	cl, err := s.workloadClient(ctx, r, z, target)
	var hidden errNotVisible
	switch {
	case errors.As(err, &hidden):
		return preflightCheck{Name: taintCheckName, Unknown: true, Message: "not checked: " + strings.TrimPrefix(hidden.msg, "not shown: ")}
	case err != nil:
		return preflightCheck{Name: taintCheckName, Unknown: true, Message: "not checked: " + err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, workloadTimeout)
	defer cancel()
	tainted, err := taintedReplicaNodes(ctx, cl, group)
	if err != nil {
		return preflightCheck{Name: taintCheckName, Unknown: true, Message: fmt.Sprintf("not checked: reading %s: %s", target, err)}
	}
	if len(tainted) == 0 {
		return preflightCheck{Name: taintCheckName, Passed: true, Message: "no node of " + target + " that holds this group's replicas carries " + srv1alpha1.LostQuorumTaintKey}
	}
	var groups srv1alpha1.ProtectionGroupList
	if err := cl.List(ctx, &groups, client.InNamespace(z.Namespace)); err != nil {
		return preflightCheck{Name: taintCheckName, Unknown: true, Message: fmt.Sprintf("not checked: listing the groups on %s: %s", target, toAPIError(err).Message)}
	}
	var others []string
	for _, g := range groups.Items {
		if g.Name != group && g.Status.CurrentState == srv1alpha1.StateRunning {
			others = append(others, g.Name)
		}
	}
	sort.Strings(others)
	if len(others) == 0 {
		return preflightCheck{Name: taintCheckName, Passed: true, Message: fmt.Sprintf("%s carries %s; no other group runs on %s, so the failover removes it",
			strings.Join(tainted, ", "), srv1alpha1.LostQuorumTaintKey, target)}
	}
	return preflightCheck{Name: taintCheckName, Message: fmt.Sprintf("%s on %s carries %s and groups %s run there: the failover will hold until they stop, unless it is forced",
		strings.Join(tainted, ", "), target, srv1alpha1.LostQuorumTaintKey, strings.Join(others, ", "))}
}

// taintedReplicaNodes names the nodes holding the group's DRBD replicas that
// carry the lost-quorum taint, sorted.
func taintedReplicaNodes(ctx context.Context, cl client.Client, group string) ([]string, error) {
	var res srv1alpha1.DRBDResourceList
	if err := cl.List(ctx, &res, client.MatchingLabels{srv1alpha1.ProtectionGroupLabel: group}); err != nil {
		return nil, errors.New(toAPIError(err).Message)
	}
	seen := map[string]bool{}
	var out []string
	for _, r := range res.Items {
		n := r.Spec.NodeName
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		var node corev1.Node
		err := cl.Get(ctx, client.ObjectKey{Name: n}, &node)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, errors.New(toAPIError(err).Message)
		}
		for _, t := range node.Spec.Taints {
			if t.Key == srv1alpha1.LostQuorumTaintKey {
				out = append(out, n)
				break
			}
		}
	}
	sort.Strings(out)
	return out, nil
}
