package protection_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/env"
)

// BenchmarkProtect100VMs protects 100 running VMs of one group at once, each
// with one block PVC, at the DRBD simulator's zero-delay initial sync, and
// reports the time from the creation of the 100 ProtectionRequests to the last
// one Protected (protect-ms) and per VM. It fails if two replicas on a node
// share a port or a minor: requests made at once must still be given distinct
// ones.
//
//	go test ./test/e2e/protection -run '^$' -bench Protect100VMs -benchtime 1x -v
func BenchmarkProtect100VMs(b *testing.B) {
	const n = 100
	z := newZone(b)
	ctx := b.Context()
	q, p := z.Client(env.Quorum), z.Client(env.Primary)
	for i := range n {
		name := fmt.Sprintf("vm%03d", i)
		makePVC(b, p, name+"-disk", "standard", corev1.PersistentVolumeBlock)
		makeVM(b, p, name, pvcVolume("disk", name+"-disk"))
	}
	// The wait follows a watch: re-listing 100 requests every few milliseconds
	// would cost the servers and this process more than the flow measured.
	wc, err := client.NewWithWatch(z.Clusters[env.Quorum].Config, client.Options{Scheme: z.Scheme})
	require.NoError(b, err)
	w, err := wc.Watch(ctx, &srv1alpha1.ProtectionRequestList{}, client.InNamespace(env.Namespace))
	require.NoError(b, err)
	defer w.Stop()
	b.ResetTimer()
	start := time.Now()
	for i := range n {
		require.NoError(b, q.Create(ctx, newRequestIn(fmt.Sprintf("protect-vm%03d", i), fmt.Sprintf("vm%03d", i), "bench-pg")))
	}
	waitProtected(b, w, n, 10*time.Minute)
	elapsed := time.Since(start)
	b.StopTimer()
	for _, c := range []string{env.Primary, env.DR} {
		list := &srv1alpha1.DRBDResourceList{}
		require.NoError(b, z.Client(c).List(ctx, list, client.InNamespace(env.AppNS)))
		require.Len(b, list.Items, n, "DRBDResources on %s", c)
		ports, minors := map[string]string{}, map[string]string{}
		for _, r := range list.Items {
			key := fmt.Sprintf("%s port %d", r.Spec.NodeName, r.Spec.Port)
			require.Empty(b, ports[key], "%s and %s share %s on %s", ports[key], r.Name, key, c)
			ports[key] = r.Name
			for _, v := range r.Spec.Volumes {
				key := fmt.Sprintf("%s minor %d", r.Spec.NodeName, v.Minor)
				require.Empty(b, minors[key], "%s and %s share %s on %s", minors[key], r.Name, key, c)
				minors[key] = r.Name
			}
		}
	}
	b.Logf("%d VMs protected at once in %s", n, elapsed.Round(time.Millisecond))
	b.ReportMetric(float64(elapsed.Milliseconds()), "protect-ms")
	b.ReportMetric(float64(elapsed.Milliseconds())/n, "ms/vm")
}

// waitProtected follows w until n distinct requests have reached Protected,
// and fails the benchmark on a Failed request or at the deadline.
func waitProtected(b *testing.B, w watch.Interface, n int, timeout time.Duration) {
	b.Helper()
	deadline := time.After(timeout)
	protected := map[string]bool{}
	for len(protected) < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				b.Fatalf("the watch of ProtectionRequests ended with %d of %d Protected", len(protected), n)
			}
			r, isRequest := ev.Object.(*srv1alpha1.ProtectionRequest)
			if !isRequest {
				continue
			}
			switch r.Status.Phase {
			case srv1alpha1.ProtectionProtected:
				protected[r.Name] = true
			case srv1alpha1.ProtectionFailed:
				b.Fatalf("request %s failed: %v", r.Name, r.Status.Conditions)
			}
		case <-deadline:
			b.Fatalf("timed out after %s: %d of %d requests Protected", timeout, len(protected), n)
		}
	}
}
