package drpc

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// ReasonKeyFailed is the reason of a pre-shared key that could not be minted.
const ReasonKeyFailed = "KeyFailed"

// volSync reports whether the DRPC's zone replicates with VolSync.
func (s *scope) volSync() bool { return s.backend == srv1alpha1.BackendVolSync }

// ensureKey mints the VolSync movers' pre-shared key once, in a Secret next to
// the DRPC on the quorum cluster, and copies it to every reachable workload
// cluster under the name the VRGs there wait for. Both movers of a pair must
// read the same key, so neither side may mint its own. A cluster whose VRG
// reports DataReady has its copy and is not written again.
func (r *Reconciler) ensureKey(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !s.volSync() {
		return ctrl.Result{}, nil
	}
	var missing []string
	for _, c := range s.clusters {
		if v := s.vrgs[c]; s.remotes[c] != nil && (v == nil || !meta.IsStatusConditionTrue(v.Status.Conditions, drv1alpha1.ConditionDataReady)) {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 {
		return ctrl.Result{}, nil
	}
	key, err := r.quorumKey(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	for _, c := range missing {
		rc := s.remotes[c]
		// Into the DR namespace of the workload cluster, where the quorum
		// identity may create Secrets: creating Secrets in any namespace would
		// let it mint tokens for every ServiceAccount there. pg-controller
		// copies the key to the VRG's namespace, only for a VRG of the group
		// the key's label names.
		copied := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: s.drpc.Namespace, Name: drv1alpha1.VolSyncPSKSecretName(s.drpc.Name),
				Labels: map[string]string{srv1alpha1.ManagedByLabel: srv1alpha1.ManagedByValue, srv1alpha1.ZoneLabel: s.zone,
					srv1alpha1.ProtectionGroupLabel: s.group.Name}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{drv1alpha1.VolSyncPSKKey: key},
		}
		// Create: the copy's value never changes, and reading Secrets on a
		// workload cluster is a right quorum-manager does not need.
		err := rc.Direct.Create(ctx, copied)
		if apierrors.IsAlreadyExists(err) {
			err = labelKey(ctx, rc.Direct, copied)
		}
		if err != nil {
			return ctrl.Result{}, flow.Transient(srv1alpha1.ReasonWriteFailed, fmt.Errorf("cluster %s: creating the pre-shared-key Secret %s/%s: %w", c, copied.Namespace, copied.Name, err))
		}
	}
	return ctrl.Result{}, nil
}

// KeyFieldOwner is the field manager of labelKey's apply.
const KeyFieldOwner = "siterecovery-volsync-key"

// labelKey gives an existing copy of the key the group label, which a copy
// made before the label existed lacks, so that pg-controller, which refuses a
// key not labelled for the VRG's group (PreSharedKeyRefused), takes it
// without anyone re-minting it by hand. A server-side apply without force
// only adds what nobody set: where the label names another group, or the
// value differs, it conflicts and the copy is left as it is (that key is not
// this DRPC's to claim, and pg-controller's refusal stands). It reads nothing
// the Create did not write.
func labelKey(ctx context.Context, c client.Client, copied *corev1.Secret) error {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("Secret")
	u.SetNamespace(copied.Namespace)
	u.SetName(copied.Name)
	u.SetLabels(copied.Labels)
	u.Object["type"] = string(copied.Type)
	data := map[string]any{}
	for k, v := range copied.Data {
		data[k] = base64.StdEncoding.EncodeToString(v)
	}
	u.Object["data"] = data
	err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(KeyFieldOwner))
	if apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// quorumKey reads or mints the DRPC's key on the quorum cluster. The key
// never appears in a log, event, condition or error.
func (r *Reconciler) quorumKey(ctx context.Context, s *scope) ([]byte, error) {
	name := client.ObjectKey{Namespace: s.drpc.Namespace, Name: drv1alpha1.VolSyncPSKSecretName(s.drpc.Name)}
	secret := &corev1.Secret{}
	err := r.APIReader.Get(ctx, name, secret)
	if err == nil {
		return secret.Data[drv1alpha1.VolSyncPSKKey], nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, flow.Transient(srv1alpha1.ReasonReadFailed, fmt.Errorf("reading Secret %s: %w", name, err))
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, flow.Transient(ReasonKeyFailed, fmt.Errorf("generating the pre-shared key of %s: %w", s.drpc.Name, err))
	}
	secret = &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: name.Namespace, Name: name.Name,
			Labels: map[string]string{srv1alpha1.ManagedByLabel: srv1alpha1.ManagedByValue, srv1alpha1.ZoneLabel: s.zone}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{drv1alpha1.VolSyncPSKKey: []byte("volsync:" + hex.EncodeToString(raw))},
	}
	if err := controllerutil.SetControllerReference(s.drpc, secret, r.Client.Scheme()); err != nil {
		return nil, err
	}
	if err := r.Client.Create(ctx, secret); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, flow.Waiting(ReasonProgressing, syncingRetry, "the pre-shared key of %s was just minted by another reconcile", s.drpc.Name)
		}
		return nil, flow.Transient(srv1alpha1.ReasonWriteFailed, fmt.Errorf("creating Secret %s: %w", name, err))
	}
	return secret.Data[drv1alpha1.VolSyncPSKKey], nil
}

// deleteKey deletes the quorum's copy of the key when the DRPC goes; each
// VRG deletes the copy on its cluster.
func (r *Reconciler) deleteKey(ctx context.Context, d *drv1alpha1.DRPlacementControl) error {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: drv1alpha1.VolSyncPSKSecretName(d.Name)}}
	if err := client.IgnoreNotFound(r.Client.Delete(ctx, secret)); err != nil {
		return flow.Transient(srv1alpha1.ReasonWriteFailed, fmt.Errorf("deleting Secret %s/%s: %w", secret.Namespace, secret.Name, err))
	}
	return nil
}

// volSyncSpec is the spec.volSync of a VRG the DRPC writes on cluster: the
// PVCs a secondary receives, or the final sync a primary runs.
func (s *scope) volSyncSpec(cluster string, state drv1alpha1.ReplicationState) *drv1alpha1.VRGVolSyncSpec {
	if !s.volSync() {
		return nil
	}
	if state == drv1alpha1.Primary {
		dsts := s.destinations(cluster)
		if s.finalSync == "" && len(dsts) == 0 {
			return nil
		}
		return &drv1alpha1.VRGVolSyncSpec{FinalSync: s.finalSync, Destinations: dsts}
	}
	specs := s.rdSpecs(cluster)
	if len(specs) == 0 {
		return nil
	}
	return &drv1alpha1.VRGVolSyncSpec{RDSpecs: specs}
}

// rdSpecs are the PVCs a secondary VRG on cluster receives: those the VRG
// where the application runs reports as protected by VolSync. While that VRG
// is unreachable or reports none, the secondary keeps what it was given, and
// a VRG turning secondary receives the PVCs it protected itself.
func (s *scope) rdSpecs(cluster string) []drv1alpha1.VolSyncReplicationDestinationSpec {
	if v := s.vrgs[s.current()]; v != nil {
		if specs := rdSpecsOf(v.Status.ProtectedPVCs, s.vrgNamespace); len(specs) > 0 {
			return specs
		}
	}
	if v := s.vrgs[cluster]; v != nil {
		if v.Spec.VolSync != nil && len(v.Spec.VolSync.RDSpecs) > 0 {
			return v.Spec.VolSync.RDSpecs
		}
		return rdSpecsOf(v.Status.ProtectedPVCs, s.vrgNamespace)
	}
	return nil
}

// destinations are where the peer's destinations listen, which a primary
// VRG on cluster sends to: the addresses the peer's secondary VRG reports, as
// its ReplicationDestinations published them. While the peer is unreachable
// the primary keeps what it was given; a peer that is not secondary, or has
// published nothing yet, gives none, and the primary's cycles wait.
func (s *scope) destinations(cluster string) []drv1alpha1.VolSyncDestination {
	peer := s.other(cluster)
	if _, down := s.unreachable[peer]; down {
		if v := s.vrgs[cluster]; v != nil && v.Spec.ReplicationState == drv1alpha1.Primary && v.Spec.VolSync != nil {
			return v.Spec.VolSync.Destinations
		}
		return nil
	}
	v := s.vrgs[peer]
	if v == nil || v.Spec.ReplicationState != drv1alpha1.Secondary {
		return nil
	}
	var out []drv1alpha1.VolSyncDestination
	for _, p := range v.Status.ProtectedPVCs {
		if p.ProtectedByVolSync && p.DestinationAddress != "" {
			out = append(out, drv1alpha1.VolSyncDestination{PVCName: p.Name, Address: p.DestinationAddress})
		}
	}
	slices.SortFunc(out, func(a, b drv1alpha1.VolSyncDestination) int { return strings.Compare(a.PVCName, b.PVCName) })
	return out
}

func rdSpecsOf(pvcs []drv1alpha1.ProtectedPVC, namespace string) []drv1alpha1.VolSyncReplicationDestinationSpec {
	var out []drv1alpha1.VolSyncReplicationDestinationSpec
	for _, p := range pvcs {
		if !p.ProtectedByVolSync {
			continue
		}
		ns := p.Namespace
		if ns == "" {
			ns = namespace
		}
		var sc *string
		if p.StorageClassName != "" {
			sc = ptr.To(p.StorageClassName)
		}
		out = append(out, drv1alpha1.VolSyncReplicationDestinationSpec{ProtectedPVC: drv1alpha1.VolSyncProtectedPVC{
			Name: p.Name, Namespace: ns, StorageClassName: sc, Labels: maps.Clone(p.Labels),
			AccessModes: slices.Clone(p.AccessModes), Resources: *p.Resources.DeepCopy(), VolumeMode: p.VolumeMode,
		}})
	}
	slices.SortFunc(out, func(a, b drv1alpha1.VolSyncReplicationDestinationSpec) int {
		return strings.Compare(a.ProtectedPVC.Name, b.ProtectedPVC.Name)
	})
	return out
}

// vrgAnnotations are the annotations the DRPC carries over to its VRGs: the
// diff-sync switch, exactly as the user wrote it (the VRG's groups judge the
// value). Being part of every apply, it survives each later write, and it goes
// from the VRGs when it goes from the DRPC.
func (s *scope) vrgAnnotations() map[string]string {
	v, ok := s.drpc.Annotations[drv1alpha1.EnableDiffAnnotation]
	if !ok || !s.volSync() {
		return nil
	}
	return map[string]string{drv1alpha1.EnableDiffAnnotation: v}
}

// sameAnnotations reports whether a VRG carries exactly the annotations the
// DRPC gives it, among those it manages.
func sameAnnotations(have, want map[string]string) bool {
	w, wok := want[drv1alpha1.EnableDiffAnnotation]
	h, hok := have[drv1alpha1.EnableDiffAnnotation]
	return wok == hok && w == h
}

// runFinalSync is a relocate's last sync of a VolSync group: once the
// application stopped on src, the primary VRG there runs one more cycle of
// every group, and the target receives every write before the roles change.
// It reports whether the final sync completed. A VRG already asked to be
// secondary has passed this step.
func (r *Reconciler) runFinalSync(ctx context.Context, s *scope, src string) (bool, error) {
	v := s.vrgs[src]
	if !s.volSync() || (v != nil && v.Spec.ReplicationState == drv1alpha1.Secondary) {
		return true, nil
	}
	s.setProgression(drv1alpha1.ProgressionRunningFinalSync)
	s.finalSync = finalSyncName(s)
	if err := r.ensureVRG(ctx, s, src, drv1alpha1.Primary); err != nil {
		return false, err
	}
	v = s.vrgs[src]
	c := meta.FindStatusCondition(v.Status.Conditions, drv1alpha1.ConditionFinalSynced)
	if v.Status.ObservedGeneration != v.Generation || c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != v.Generation {
		msg := "not started"
		if c != nil {
			msg = c.Message
		}
		s.waitFor("the final sync %s on %s (%s)", s.finalSync, src, msg)
		return false, nil
	}
	s.finalSync = ""
	return true, nil
}

// finalSyncName names a relocate's final sync after the action's start, so
// that each reconcile of one relocate asks for the same one.
func finalSyncName(s *scope) string {
	if t := s.drpc.Status.ActionStartTime; t != nil {
		return fmt.Sprintf("relocate-%d", t.Unix())
	}
	return "relocate"
}

// dataLossWindow describes, for a failover of a VolSync group, the image the
// target restores: the last complete sync; later writes are lost.
func (s *scope) dataLossWindow() string {
	if !s.volSync() {
		return ""
	}
	t := s.drpc.Status.LastGroupSyncTime
	if t == nil {
		return "; no complete sync was recorded"
	}
	return fmt.Sprintf("; restored from the last complete sync at %s, writes after it are lost", t.UTC().Format("2006-01-02T15:04:05Z"))
}
