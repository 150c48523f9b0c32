package protection

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// A request's four state series exist from its first reconcile, one at 1; the
// phase label follows the request; a request that is gone has none.
func TestRequestStateMetric(t *testing.T) {
	m := newMetrics(prometheus.NewRegistry())
	req := &srv1alpha1.ProtectionRequest{ObjectMeta: metav1.ObjectMeta{Name: "protect-db"},
		Spec: srv1alpha1.ProtectionRequestSpec{VirtualMachine: srv1alpha1.VirtualMachineReference{Namespace: "apps", Name: "db"},
			ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: "prod-pg"}}}
	value := func(phase, state string) float64 {
		return testutil.ToFloat64(m.state.WithLabelValues("protect-db", "prod-pg", "apps", "db", phase, state))
	}

	req.Status.Phase = srv1alpha1.ProtectionCreatingReplication
	m.publish(req)
	assert.Equal(t, 4, testutil.CollectAndCount(m.state))
	assert.Equal(t, 1.0, value("CreatingReplication", StateInProgress))
	assert.Equal(t, 0.0, value("CreatingReplication", StateFailed), "pre-created at 0")

	req.Status.Phase = srv1alpha1.ProtectionFailed
	m.publish(req)
	assert.Equal(t, 4, testutil.CollectAndCount(m.state), "the previous phase's series are gone")
	assert.Equal(t, 1.0, value("Failed", StateFailed))

	now := metav1.Now()
	req.DeletionTimestamp = &now
	m.publish(req)
	assert.Equal(t, 1.0, value("Failed", StateRemoving))

	m.forget("protect-db")
	assert.Equal(t, 0, testutil.CollectAndCount(m.state))
}
