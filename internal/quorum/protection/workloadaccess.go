package protection

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// ReasonNamespaceNotListed is the Ready reason of a request held because a
// workload cluster of the zone does not list the VM's namespace in
// quorumAccess.applicationNamespaces for this DR namespace.
const ReasonNamespaceNotListed = remote.ReasonNamespaceNotListed

// accessRecheckCap bounds how long a request held by checkNamespaceListed
// waits before it reads the clusters' settings again: the fix is a helm
// upgrade on a workload cluster, whose ConfigMaps no watch of quorum-manager
// sees.
const accessRecheckCap = 30 * time.Second

// checkNamespaceListed holds, in Validating and before anything is created, a
// request whose VM's namespace either workload cluster's release does not list
// for this DR namespace: the quorum side allows it (checkNamespaceAllowed) but
// that cluster's quorum guard would refuse the protection halfway. The hold
// names the cluster and the value to add the namespace to, and the request
// goes on by itself once the cluster lists it. A cluster that does not say
// (no ConfigMap: an older workload chart) is unknown and not checked, as
// before the settings existed.
func (r *Reconciler) checkNamespaceListed(ctx context.Context, s *scope) error {
	ns := s.req.Spec.VirtualMachine.Namespace
	for _, sd := range s.sides() {
		settings, err := remote.ReadAccessSettings(ctx, sd.rc.Direct, s.req.Namespace)
		if err != nil {
			return remoteErr(sd.cluster, "reading the quorum access settings", err)
		}
		listed, known := settings.Lists(ns)
		if !known {
			log.FromContext(ctx).V(1).Info("workload cluster does not say which application namespaces it lists; not checked",
				"cluster", sd.cluster, "configMap", remote.AccessSettingsConfigMap)
			continue
		}
		if !listed {
			return flow.Waiting(ReasonNamespaceNotListed, min(r.recheckEvery(), accessRecheckCap),
				"VirtualMachine %s/%s waits before anything is created: %s; the request goes on once it is listed",
				ns, s.req.Spec.VirtualMachine.Name, remote.NotListedMessage(sd.cluster, s.req.Namespace, ns, settings))
		}
	}
	return nil
}
