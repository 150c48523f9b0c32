package admission

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// productLabels say what an object is to siterecovery: whose request made it,
// for which DR namespace and group, and its role in the replication stack. The
// webhook configuration selects PVCs and PVs by the role label, the quorum
// flows find their objects by all of them, and these webhooks tell the DR
// namespace an object belongs to by the DR namespace label; so only
// siterecovery changes them.
var productLabels = []string{
	srv1alpha1.ObjectRoleLabel,
	srv1alpha1.DRNamespaceLabel,
	srv1alpha1.ProtectionRequestLabel,
	srv1alpha1.ProtectionGroupLabel,
}

// changedProductLabel returns the first product label whose value (or
// presence) differs between old and cur, or "".
func changedProductLabel(old, cur *unstructured.Unstructured) string {
	o, c := old.GetLabels(), cur.GetLabels()
	for _, l := range productLabels {
		ov, ook := o[l]
		cv, cok := c[l]
		if ov != cv || ook != cok {
			return l
		}
	}
	return ""
}

// drNamespaceOf is the DR namespace an object of the replication stack
// belongs to: a local ProtectionGroup copy lives in it; DRBDResources and the
// PVCs and PVs the protection flow makes carry it as a label, which only
// siterecovery may change (changedProductLabel).
func drNamespaceOf(kind string, obj *unstructured.Unstructured) string {
	if kind == "ProtectionGroup" {
		return obj.GetNamespace()
	}
	return obj.GetLabels()[srv1alpha1.DRNamespaceLabel]
}
