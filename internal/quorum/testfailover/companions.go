package testfailover

import (
	"context"
	"errors"
	"maps"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// copyCompanions copies the group's companion objects, as the target cluster
// holds them in the VMs' namespaces (pg-sync's copies, or the objects an
// administrator put there), into the isolated namespace before the first test
// VM is created there, labelled as the test's; they go with the namespace.
// Secrets only when the group sets copySecrets. A Service is copied headless
// (clusterIP None) without node ports, load balancer or external IPs: the
// test's DNS names resolve to the test VMs, and nothing of the test is
// reachable from outside the namespace or takes production's addresses. A
// companion missing on the target is not copied: the real failover would not
// find it either.
func (r *Reconciler) copyCompanions(ctx context.Context, s *scope, rc *remote.Remote) error {
	if s.group == nil || s.group.Spec.Companions == nil {
		return nil
	}
	cluster := s.tf.Spec.TargetCluster
	namespaces := map[string]bool{}
	for _, vm := range s.group.Spec.VirtualMachines {
		namespaces[vm.Namespace] = true
	}
	for _, sel := range s.group.Spec.Companions.Objects {
		gvk := sel.Kind.GroupVersionKind()
		if gvk.Empty() || !namespaces[sel.Namespace] || (sel.Kind == srv1alpha1.CompanionSecret && !s.group.Spec.Companions.CopySecrets) {
			continue
		}
		var found []unstructured.Unstructured
		var err error
		if sel.Name != "" {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			if err = rc.Direct.Get(ctx, client.ObjectKey{Namespace: sel.Namespace, Name: sel.Name}, u); err == nil {
				found = append(found, *u)
			}
		} else {
			selector, serr := metav1.LabelSelectorAsSelector(sel.Selector)
			if serr != nil {
				continue
			}
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			err = rc.Direct.List(ctx, list, client.InNamespace(sel.Namespace), client.MatchingLabelsSelector{Selector: selector})
			found = list.Items
		}
		switch {
		case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
			continue
		case err != nil:
			return remoteErr(cluster, "reading companion "+string(sel.Kind)+" in "+sel.Namespace, companionErr(sel.Kind, err))
		}
		for i := range found {
			cp := testCompanion(s, sel.Kind, &found[i])
			if err := rc.Direct.Create(ctx, cp); err != nil && !apierrors.IsAlreadyExists(err) {
				return remoteErr(cluster, "copying companion "+string(sel.Kind)+" "+cp.GetName()+" into "+s.namespace(), companionErr(sel.Kind, err))
			}
		}
	}
	return nil
}

// testCompanion is the isolated namespace's copy of a companion.
func testCompanion(s *scope, kind srv1alpha1.CompanionKind, src *unstructured.Unstructured) *unstructured.Unstructured {
	obj := map[string]any{}
	for k, v := range src.Object {
		if k != "metadata" && k != "status" {
			obj[k] = runtime.DeepCopyJSONValue(v)
		}
	}
	out := &unstructured.Unstructured{Object: obj}
	out.SetGroupVersionKind(kind.GroupVersionKind())
	out.SetNamespace(s.namespace())
	out.SetName(src.GetName())
	labels := maps.Clone(src.GetLabels())
	if labels == nil {
		labels = map[string]string{}
	}
	// The production copy's pg-sync labels would make it look like pg-sync's.
	for _, k := range []string{"siterecovery.trilio.io/created-by", srv1alpha1.ProtectionGroupLabel, srv1alpha1.ZoneLabel} {
		delete(labels, k)
	}
	maps.Copy(labels, labelsOf(s.tf, ""))
	out.SetLabels(labels)
	if kind == srv1alpha1.CompanionService {
		if spec, ok := obj["spec"].(map[string]any); ok {
			headless(spec)
		}
	}
	return out
}

// headless makes a Service spec a headless ClusterIP one, as the guard lets
// quorum-manager create in an isolated namespace.
func headless(spec map[string]any) {
	for _, k := range []string{"clusterIPs", "externalIPs", "externalName", "loadBalancerIP", "loadBalancerClass",
		"loadBalancerSourceRanges", "externalTrafficPolicy", "healthCheckNodePort", "allocateLoadBalancerNodePorts",
		"sessionAffinity", "sessionAffinityConfig", "ipFamilies", "ipFamilyPolicy"} {
		delete(spec, k)
	}
	spec["type"] = "ClusterIP"
	spec["clusterIP"] = "None"
	if ports, ok := spec["ports"].([]any); ok {
		for _, p := range ports {
			if pm, ok := p.(map[string]any); ok {
				delete(pm, "nodePort")
			}
		}
	}
}

// companionErr keeps a Secret's API errors to their reason and code: they
// could quote what was sent.
func companionErr(kind srv1alpha1.CompanionKind, err error) error {
	if kind != srv1alpha1.CompanionSecret {
		return err
	}
	reason := apierrors.ReasonForError(err)
	var code int32
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		code = st.Status().Code
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Reason: reason, Code: code,
		Message: "Secret request failed: " + string(reason)}}
}
