package rgd

import (
	"context"
	"fmt"
	"sort"
	"strings"

	volsyncv1alpha1 "github.com/backube/volsync/api/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/workload/volsync"
)

// ReasonWaitingForAddress says a destination has not published where it listens.
const ReasonWaitingForAddress = "WaitingForAddress"

// ServiceExportGVK is the Multi-Cluster Services API's ServiceExport. It is
// handled unstructured and never watched, so that a cluster without the MCS
// CRDs runs pg-controller as long as the option is off.
var ServiceExportGVK = schema.GroupVersionKind{Group: "multicluster.x-k8s.io", Version: "v1alpha1", Kind: "ServiceExport"}

// recordDestinations records in status.destinations where each destination
// listens and returns the destinations that have not published an address.
// VolSync publishes it in status.rsyncTLS.address once the mover's Service
// has one (its ClusterIP, or the load balancer's address); with ServiceExport
// on, the Service is exported and its clusterset name is recorded instead,
// which the peer cluster resolves through the MCS implementation.
func (r *Reconciler) recordDestinations(ctx context.Context, rgd *drv1alpha1.ReplicationGroupDestination, rds []*volsyncv1alpha1.ReplicationDestination) ([]string, error) {
	out := make([]drv1alpha1.VolSyncDestination, 0, len(rds))
	var unpublished []string
	for _, rd := range rds {
		published := ""
		if rd.Status != nil && rd.Status.RsyncTLS != nil {
			published = ptr.Deref(rd.Status.RsyncTLS.Address, "")
		}
		if published == "" {
			unpublished = append(unpublished, rd.Name)
			continue
		}
		address := published
		if r.ServiceExport {
			if err := r.ensureServiceExport(ctx, rd); err != nil {
				return nil, flow.Transient(srv1alpha1.ReasonCreateFailed, fmt.Errorf("ServiceExport %s: %w", volsync.ServiceName(rd.Name), err))
			}
			address = volsync.ClusterSetAddress(rd.Namespace, rd.Name)
		}
		out = append(out, drv1alpha1.VolSyncDestination{PVCName: rd.Name, Address: address})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PVCName < out[j].PVCName })
	rgd.Status.Destinations = out
	return unpublished, nil
}

// ensureServiceExport exports the Service of a destination, named like it, so
// that the clusterset name resolves on the peer. The RD owns it, so it goes
// with the destination. Read past the cache: nothing watches ServiceExports.
func (r *Reconciler) ensureServiceExport(ctx context.Context, rd *volsyncv1alpha1.ReplicationDestination) error {
	se := &unstructured.Unstructured{}
	se.SetGroupVersionKind(ServiceExportGVK)
	err := r.uncached().Get(ctx, client.ObjectKey{Namespace: rd.Namespace, Name: volsync.ServiceName(rd.Name)}, se)
	if !apierrors.IsNotFound(err) {
		return err
	}
	se = &unstructured.Unstructured{}
	se.SetGroupVersionKind(ServiceExportGVK)
	se.SetNamespace(rd.Namespace)
	se.SetName(volsync.ServiceName(rd.Name))
	se.SetLabels(map[string]string{volsync.RGDLabel: rd.Labels[volsync.RGDLabel]})
	// Not a controller reference with blockOwnerDeletion, which would need
	// the right to update the destination's finalizers.
	if err := controllerutil.SetOwnerReference(rd, se, r.Client.Scheme()); err != nil {
		return err
	}
	if err := r.Client.Create(ctx, se); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// unpublishedMessage names the destinations a group waits on for an address.
func unpublishedMessage(names []string) string {
	return "waiting for ReplicationDestination " + strings.Join(names, ", ") + " to publish its address (status.rsyncTLS.address)"
}
