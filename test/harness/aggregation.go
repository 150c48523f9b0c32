package harness

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// FrontProxyClientName is the common name of the client certificate the API
// server presents to aggregated API servers (the APIService backends), and
// the one name they accept request headers from.
const FrontProxyClientName = "front-proxy-client"

const (
	frontProxyCAFile   = "front-proxy-ca.crt"
	frontProxyCertFile = "front-proxy-client.crt"
	frontProxyKeyFile  = "front-proxy-client.key"
)

// FrontProxyCA is the PEM CA of the client certificate the API server proxies
// aggregated API requests with: an aggregated server trusts the X-Remote-User
// and X-Remote-Group headers of a caller only if its certificate chains to it.
func (c *Cluster) FrontProxyCA() ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(c.Dir, certDir, frontProxyCAFile))
	if err != nil {
		return nil, fmt.Errorf("cluster %q: reading the front-proxy CA: %w", c.Name, err)
	}
	return b, nil
}

// configureAggregation turns on the API aggregation layer, as kubeadm does:
// the API server proxies the groups of an APIService to its backend with a
// client certificate of its own (--proxy-client-*) and the authenticated
// user in request headers, which backends trust for that certificate's CA
// (--requestheader-*). envtest sets none of these. The certificates are made
// once per cluster directory, so a restarted API server keeps them.
func configureAggregation(args *envtest.Arguments, certPath string) error {
	caFile, certFile, keyFile := filepath.Join(certPath, frontProxyCAFile), filepath.Join(certPath, frontProxyCertFile), filepath.Join(certPath, frontProxyKeyFile)
	if _, err := os.Stat(keyFile); os.IsNotExist(err) {
		if err := writeFrontProxyCerts(caFile, certFile, keyFile); err != nil {
			return fmt.Errorf("front-proxy certificates: %w", err)
		}
	}
	args.Set("requestheader-client-ca-file", caFile)
	args.Set("requestheader-allowed-names", FrontProxyClientName)
	args.Set("requestheader-username-headers", "X-Remote-User")
	args.Set("requestheader-group-headers", "X-Remote-Group")
	args.Set("requestheader-extra-headers-prefix", "X-Remote-Extra-")
	args.Set("proxy-client-cert-file", certFile)
	args.Set("proxy-client-key-file", keyFile)
	return nil
}

func writeFrontProxyCerts(caFile, certFile, keyFile string) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "front-proxy-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour * 365), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: FrontProxyClientName},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour * 365),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caTmpl, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	for file, block := range map[string]*pem.Block{
		caFile:   {Type: "CERTIFICATE", Bytes: caDER},
		certFile: {Type: "CERTIFICATE", Bytes: der},
		keyFile:  {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(file, pem.EncodeToMemory(block), 0o600); err != nil {
			return err
		}
	}
	return nil
}
