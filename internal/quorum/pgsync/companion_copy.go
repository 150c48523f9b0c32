package pgsync

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// companionHashAnnotation holds, on a companion copy, the hash of what pg-sync
// last wrote: a copy whose hash matches the one built now is not written
// again, and the hash says nothing a reader of the copy cannot read anyway.
const companionHashAnnotation = "siterecovery.trilio.io/companion-hash"

// lastAppliedAnnotation is kubectl's copy of the object as applied: it may
// hold a Secret's data in clear, and describes the source, not the copy.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// companionLabels are the labels of every companion copy: pg-sync's group
// labels, its DR namespace's (the workload chart's guard lets this DR
// namespace's identity change only what carries it) and CreatedByLabel, the
// proof that pg-sync made it and may delete it.
func companionLabels(g *srv1alpha1.ProtectionGroup) map[string]string {
	l := pgSyncLabels(g)
	l[srv1alpha1.DRNamespaceLabel] = g.Namespace
	l[CreatedByLabel] = ControllerName
	return l
}

// buildCompanionCopy is the copy of src pg-sync writes on a cluster: the
// source's labels, annotations and content, without what the source's API
// server set (status, uid, resourceVersion, owners, finalizers) or allocated
// (a Service's cluster IPs and node ports), then the cluster's merge patch,
// then pg-sync's labels and the hash of the result. A patch cannot rename
// the copy or take pg-sync's labels off.
func buildCompanionCopy(src *unstructured.Unstructured, kind srv1alpha1.CompanionKind, labels map[string]string, patch []byte) (*unstructured.Unstructured, error) {
	obj := map[string]any{}
	for k, v := range src.Object {
		if k != "metadata" && k != "status" {
			obj[k] = runtime.DeepCopyJSONValue(v)
		}
	}
	meta := map[string]any{"name": src.GetName(), "namespace": src.GetNamespace()}
	if l := src.GetLabels(); len(l) > 0 {
		meta["labels"] = stringMap(l)
	}
	if a := src.GetAnnotations(); len(a) > 0 {
		a = maps.Clone(a)
		delete(a, lastAppliedAnnotation)
		delete(a, companionHashAnnotation)
		if len(a) > 0 {
			meta["annotations"] = stringMap(a)
		}
	}
	obj["metadata"] = meta
	if kind == srv1alpha1.CompanionService {
		stripServiceAllocations(obj)
	}
	if len(patch) > 0 {
		var p any
		if err := json.Unmarshal(patch, &p); err != nil {
			return nil, fmt.Errorf("mergePatch is not JSON: %w", err)
		}
		merged, ok := mergePatch(obj, p).(map[string]any)
		if !ok {
			return nil, fmt.Errorf("mergePatch is not a JSON object")
		}
		obj = merged
	}
	out := &unstructured.Unstructured{Object: obj}
	out.SetGroupVersionKind(kind.GroupVersionKind())
	out.SetName(src.GetName())
	out.SetNamespace(src.GetNamespace())
	l := out.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	maps.Copy(l, labels)
	out.SetLabels(l)
	a := out.GetAnnotations()
	delete(a, companionHashAnnotation)
	out.SetAnnotations(a)
	sum, err := json.Marshal(out.Object)
	if err != nil {
		return nil, err
	}
	h := sha256.Sum256(sum)
	if a == nil {
		a = map[string]string{}
	}
	a[companionHashAnnotation] = hex.EncodeToString(h[:12])
	out.SetAnnotations(a)
	return out, nil
}

// stripServiceAllocations removes what the source cluster's API server
// allocated to a Service (kubernetes pkg/registry/core/service/storage
// allocates clusterIP(s), node ports and the health check node port): the DR
// cluster allocates its own. A headless Service keeps clusterIP None.
func stripServiceAllocations(obj map[string]any) {
	spec, ok := obj["spec"].(map[string]any)
	if !ok {
		return
	}
	if spec["clusterIP"] != "None" {
		delete(spec, "clusterIP")
		delete(spec, "clusterIPs")
	}
	delete(spec, "healthCheckNodePort")
	if ports, ok := spec["ports"].([]any); ok {
		for _, p := range ports {
			if pm, ok := p.(map[string]any); ok {
				delete(pm, "nodePort")
			}
		}
	}
}

// mergePatch applies a JSON merge patch (RFC 7386, section 2): an object
// patch merges key by key, null deletes, anything else replaces.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
			continue
		}
		t[k] = mergePatch(t[k], v)
	}
	return t
}

func stringMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
