package virtapi

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/siterecovery/siterecovery/test/harness"
	"github.com/siterecovery/siterecovery/test/sim/guest"
)

// Namespace and ServiceName are where KubeVirt installs virt-api's Service.
const (
	Namespace   = "kubevirt"
	ServiceName = "virt-api"
)

// Server is a running virt-api simulator of one cluster.
type Server struct {
	h *handler
}

// Calls returns how many calls of action ("freeze", "unfreeze") were served.
func (s *Server) Calls(action string) int {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	return s.h.calls[action]
}

// Start serves the subresources of c's VMIs from an HTTPS server in the test
// process, registers it with c's API server as virt-operator registers
// virt-api (pkg/virt-operator/resource/generate/components/apiservices.go),
// and returns once the API server reports the APIService Available. Both stop
// when t ends. The Service is of type ExternalName, 127.0.0.1: with no
// service network in a test cluster, that is how the API server reaches a
// backend outside it.
func Start(t testing.TB, c *harness.Cluster, guests *guest.Guests) *Server {
	t.Helper()
	s, stop, err := StartE(t.Context(), c, guests)
	if err != nil {
		t.Fatalf("virt-api simulator: %v", err)
	}
	t.Cleanup(stop)
	return s
}

// StartE is Start for a caller that is not a test (the sandbox): it returns
// the function that stops the server.
func StartE(ctx context.Context, c *harness.Cluster, guests *guest.Guests) (*Server, func(), error) {
	h := &handler{client: c.Client, guests: guests, safety: map[types.NamespacedName]*time.Timer{}, calls: map[string]int{}}
	caPEM, cert, err := servingCert(ServiceName + "." + Namespace + ".svc")
	if err != nil {
		return nil, nil, err
	}
	frontProxyCA, err := c.FrontProxyCA()
	if err != nil {
		return nil, nil, err
	}
	callers := x509.NewCertPool()
	if !callers.AppendCertsFromPEM(frontProxyCA) {
		return nil, nil, fmt.Errorf("no certificate in cluster %s's front-proxy CA", c.Name)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, TLSConfig: &tls.Config{
		Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12,
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: callers,
		VerifyPeerCertificate: func(_ [][]byte, chains [][]*x509.Certificate) error {
			if len(chains) == 0 || chains[0][0].Subject.CommonName != harness.FrontProxyClientName {
				return fmt.Errorf("only the API server's front proxy (%s) may call", harness.FrontProxyClientName)
			}
			return nil
		},
	}}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	stop := func() {
		h.stop()
		_ = srv.Close()
	}
	port := int32(ln.Addr().(*net.TCPAddr).Port)
	if err := register(ctx, c.Client, port, caPEM); err != nil {
		stop()
		return nil, nil, fmt.Errorf("cluster %s: %w", c.Name, err)
	}
	return &Server{h: h}, stop, nil
}

func register(ctx context.Context, cl client.Client, port int32, caPEM []byte) error {
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: ServiceName}, Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeExternalName, ExternalName: "127.0.0.1",
			Ports: []corev1.ServicePort{{Name: "https", Port: port}},
		}},
		apiService(port, caPEM),
	} {
		if err := cl.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		var ok bool
		ok, last = available(ctx, cl)
		return ok, nil
	})
	if err != nil {
		return fmt.Errorf("APIService %s.%s not Available (%s): %w", Version, Group, last, err)
	}
	return nil
}

// available says whether the API server reports the APIService Available,
// and its condition (or why it could not be read).
func available(ctx context.Context, cl client.Client) (bool, string) {
	as := apiService(0, nil)
	if err := cl.Get(ctx, client.ObjectKeyFromObject(as), as); err != nil {
		return false, err.Error()
	}
	conds, _, _ := unstructured.NestedSlice(as.Object, "status", "conditions")
	for _, c := range conds {
		cond, _ := c.(map[string]any)
		if cond["type"] == "Available" {
			return cond["status"] == "True", fmt.Sprintf("%v %v: %v", cond["status"], cond["reason"], cond["message"])
		}
	}
	return false, "no Available condition yet"
}

// apiService is virt-api's APIService, pointing at port with caBundle. The
// test module does not depend on kube-aggregator's types, so it is built
// unstructured.
func apiService(port int32, caPEM []byte) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": Version + "." + Group},
		"spec": map[string]any{
			"service":              map[string]any{"namespace": Namespace, "name": ServiceName, "port": int64(port)},
			"group":                Group,
			"version":              Version,
			"caBundle":             base64.StdEncoding.EncodeToString(caPEM),
			"groupPriorityMinimum": int64(1000),
			"versionPriority":      int64(15),
		},
	}}
	return u
}

// servingCert makes a CA and a serving certificate for host, signed by it.
func servingCert(host string) ([]byte, tls.Certificate, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "virt-api-simulator-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caTmpl, &key.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
