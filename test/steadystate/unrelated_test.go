package steadystate

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// unrelatedNS holds the objects of nobody's: the applications a workload
// cluster runs beside the protected ones.
const unrelatedNS = "unrelated"

// unrelated creates pvcs PVCs and vms halted VMs that no DR namespace
// protects, eight writers at a time.
func (f *fleet) unrelated(ctx context.Context, cluster string, pvcs, vms int) {
	c := f.client(cluster)
	err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: unrelatedNS}})
	require.NoError(f.t, client.IgnoreAlreadyExists(err))
	objects := make(chan client.Object, 64)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for o := range objects {
				if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for i := range pvcs {
		objects <- &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: unrelatedNS, Name: fmt.Sprintf("data-%05d", i), Labels: map[string]string{"app": "unrelated"}},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}}},
		}
	}
	for i := range vms {
		objects <- &kubevirtv1.VirtualMachine{
			ObjectMeta: metav1.ObjectMeta{Namespace: unrelatedNS, Name: fmt.Sprintf("vm-%05d", i), Labels: map[string]string{"app": "unrelated"}},
			Spec:       kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(kubevirtv1.RunStrategyHalted), Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{}},
		}
	}
	close(objects)
	wg.Wait()
	select {
	case err := <-errs:
		f.t.Fatalf("creating unrelated objects on %s: %v", cluster, err)
	default:
	}
}

// freeAddress is a local address nothing listens on now.
func freeAddress(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

func getURL(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(resp.Body)
}
