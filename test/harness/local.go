package harness

import (
	"context"
	"fmt"
	"net"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FreeAddress is a loopback address (127.0.0.1:<port>) that nothing listens
// on now, for a listener the caller starts next.
func FreeAddress() (string, error) {
	a, err := freeLoopback()
	if err != nil {
		return "", err
	}
	return a.String(), nil
}

// FreePort is the port of a FreeAddress.
func FreePort() (int, error) {
	a, err := freeLoopback()
	if err != nil {
		return 0, err
	}
	return a.Port, nil
}

func freeLoopback() (*net.TCPAddr, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr), nil
}

// ServiceAccountToken mints a token of the ServiceAccount namespace/name with
// the TokenRequest API, as the kubelet does for a pod, valid for ttl.
func ServiceAccountToken(ctx context.Context, c client.Client, namespace, name string, ttl time.Duration) (string, error) {
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(ttl / time.Second))}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := c.SubResource("token").Create(ctx, sa, tr); err != nil {
		return "", fmt.Errorf("minting a token of ServiceAccount %s/%s: %w", namespace, name, err)
	}
	return tr.Status.Token, nil
}
