package drpc

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// runningVMI names a VMI of the group that still exists on cluster, read
// through the API server, or "" when none does.
//
// The workload copy's Stopped comes from pg-controller's cache, and the
// quorum's cached copy of it may be older still: a VMI can outlive both after
// an API server restart. Storage turned secondary under a running VMI loses
// its writes, and a VM started on the other cluster while it runs runs twice,
// so both steps wait for the API server itself to say every VMI is gone.
func (r *Reconciler) runningVMI(ctx context.Context, s *scope, cluster string) (string, error) {
	rc := s.remotes[cluster]
	if rc == nil {
		return "", flow.Waiting(srv1alpha1.ReasonClusterUnreachable, unreachableRetry, "cluster %s: %v", cluster, s.unreachable[cluster])
	}
	for _, vm := range s.group.Spec.VirtualMachines {
		vmi := &kubevirtv1.VirtualMachineInstance{}
		err := rc.Direct.Get(ctx, client.ObjectKey{Namespace: vm.Namespace, Name: vm.Name}, vmi)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return "", flow.Transient(srv1alpha1.ReasonReadFailed, fmt.Errorf("cluster %s: reading VirtualMachineInstance %s/%s: %w", cluster, vm.Namespace, vm.Name, err))
		case vmi.IsFinal():
			// A final VMI mounts nothing any more.
			continue
		}
		return vm.Namespace + "/" + vm.Name, nil
	}
	return "", nil
}
