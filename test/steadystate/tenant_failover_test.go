package steadystate

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// failoverRound fails a tenant's group over to the DR cluster of its pair
// and back, and returns the two times, each from the request's creation to
// its Completed phase as this process sees it.
func (f *fleet) failoverRound(ctx context.Context, tn tenant, group string, round int) (over, back time.Duration, err error) {
	targets := []string{drOf(tn.pair), primaryOf(tn.pair)}
	var took [2]time.Duration
	for i, target := range targets {
		name := fmt.Sprintf("%s-%d-%d", group, round, i)
		began := time.Now()
		if err := f.client("quorum").Create(ctx, &srv1alpha1.FailoverRequest{
			ObjectMeta: metav1.ObjectMeta{Namespace: tn.drNamespace, Name: name},
			Spec: srv1alpha1.FailoverRequestSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: group},
				TargetCluster: target, FailoverType: srv1alpha1.FailoverPlanned},
		}); err != nil {
			return 0, 0, err
		}
		deadline := time.Now().Add(10 * time.Minute)
		for {
			fr := &srv1alpha1.FailoverRequest{}
			if err := f.client("quorum").Get(ctx, client.ObjectKey{Namespace: tn.drNamespace, Name: name}, fr); err != nil {
				return 0, 0, err
			}
			if fr.Status.Phase == srv1alpha1.FailoverCompleted {
				took[i] = time.Since(began)
				break
			}
			if fr.Status.Phase == srv1alpha1.FailoverFailed || time.Now().After(deadline) {
				return 0, 0, fmt.Errorf("FailoverRequest %s/%s to %s: phase %q: %s", tn.drNamespace, name, target, fr.Status.Phase, fr.Status.Message)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return took[0], took[1], nil
}
