package failover_test

import (
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/siterecovery/siterecovery/test/env"
)

func leaseGone(z *zone, name string) error {
	l := &coordinationv1.Lease{}
	err := z.Client(env.Quorum).Get(z.ctx, types.NamespacedName{Namespace: env.Namespace, Name: name}, l)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("lease %s still held by %v", name, *l.Spec.HolderIdentity)
}
