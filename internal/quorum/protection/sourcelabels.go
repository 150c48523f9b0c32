package protection

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// sourceLabels are the labels the VM's own source PVCs carry while they back
// the primary replica: the drbd-node-agent hands DRBD only the device of a
// claim labelled with its DRBDResource's DR namespace and protection request.
// They carry no role label, so no teardown tier ever selects (and deletes) them.
func sourceLabels(s *scope) map[string]string {
	return map[string]string{srv1alpha1.DRNamespaceLabel: s.req.Namespace, srv1alpha1.ProtectionRequestLabel: s.req.Name}
}

// labelSources labels the source PVCs of the primary side sd while the
// backing claims are provisioned, before its DRBDResource is created. A source PVC another request labelled stalls the
// request: one claim cannot back two replicas.
func (r *Reconciler) labelSources(ctx context.Context, s *scope, sd side) error {
	want := sourceLabels(s)
	for _, v := range s.req.Status.Volumes {
		pvc := &corev1.PersistentVolumeClaim{}
		key := types.NamespacedName{Namespace: s.vmNamespace(), Name: v.SourcePVC}
		if err := sd.rc.Direct.Get(ctx, key, pvc); err != nil {
			return remoteErr(sd.cluster, "reading PersistentVolumeClaim "+key.String(), err)
		}
		l := pvc.Labels
		if l[srv1alpha1.ProtectionRequestLabel] != "" && !ownedBy(pvc, s) {
			return flow.Stalled(ReasonTargetConflict, "PersistentVolumeClaim %s on %s is the source of protection request %s/%s already",
				key, sd.cluster, l[srv1alpha1.DRNamespaceLabel], l[srv1alpha1.ProtectionRequestLabel])
		}
		if ownedBy(pvc, s) {
			continue
		}
		patched := pvc.DeepCopy()
		if patched.Labels == nil {
			patched.Labels = map[string]string{}
		}
		maps.Copy(patched.Labels, want)
		if err := sd.rc.Direct.Patch(ctx, patched, client.MergeFrom(pvc), client.FieldOwner(FieldOwner)); err != nil {
			return remoteErr(sd.cluster, "labelling PersistentVolumeClaim "+key.String(), err)
		}
	}
	return nil
}

// releaseSources removes this request's labels from the source PVCs of the
// primary side once no DRBDResource uses them; claims labelled by another
// request, or gone, are left alone.
func (r *Reconciler) releaseSources(ctx context.Context, s *scope) error {
	sd := s.sides()[0]
	for _, v := range s.req.Status.Volumes {
		if v.SourcePVC == "" {
			continue
		}
		pvc := &corev1.PersistentVolumeClaim{}
		key := types.NamespacedName{Namespace: s.vmNamespace(), Name: v.SourcePVC}
		if err := sd.rc.Direct.Get(ctx, key, pvc); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return remoteErr(sd.cluster, "reading PersistentVolumeClaim "+key.String(), err)
		}
		if !ownedBy(pvc, s) {
			continue
		}
		patched := pvc.DeepCopy()
		for k := range sourceLabels(s) {
			delete(patched.Labels, k)
		}
		if err := sd.rc.Direct.Patch(ctx, patched, client.MergeFrom(pvc), client.FieldOwner(FieldOwner)); err != nil && !apierrors.IsNotFound(err) {
			return remoteErr(sd.cluster, "releasing PersistentVolumeClaim "+key.String(), err)
		}
	}
	return nil
}
