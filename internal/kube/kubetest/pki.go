package kubetest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the key material of one control plane, written under dir: a CA
// that signs the API server's serving certificate and the admin's client
// certificate, and the key pair that signs service-account tokens.
type pki struct {
	dir string

	caCert          []byte // PEM
	adminCert       []byte // PEM
	adminKey        []byte // PEM
	servingCertFile string
	servingKeyFile  string
	caFile          string
	saPublicFile    string
	saPrivateFile   string
}

// adminUser is the client certificate's subject; the group system:masters
// is bound to cluster-admin by the API server's bootstrap policy.
const (
	adminUser  = "strata-admin"
	adminGroup = "system:masters"
)

// newPKI generates the key material and writes it under dir.
func newPKI(dir string, validFor time.Duration) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	now := time.Now()
	notBefore, notAfter := now.Add(-time.Hour), now.Add(validFor)

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "strata-kubetest-ca"},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		return nil, fmt.Errorf("creating the CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}

	leaf := func(tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl.SerialNumber = serial()
		tmpl.NotBefore, tmpl.NotAfter = notBefore, notAfter
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
		if err != nil {
			return nil, nil, fmt.Errorf("creating certificate %q: %w", tmpl.Subject.CommonName, err)
		}
		keyPEM, err = privatePEM(key)
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, err
	}
	servingCert, servingKey, err := leaf(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.ParseIP(serviceIP)},
	})
	if err != nil {
		return nil, err
	}
	adminCert, adminKey, err := leaf(&x509.Certificate{
		Subject:     pkix.Name{CommonName: adminUser, Organization: []string{adminGroup}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, err
	}

	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	saPrivate, err := privatePEM(saKey)
	if err != nil {
		return nil, err
	}
	saPublicDER, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		return nil, err
	}

	p := &pki{
		dir:             dir,
		caCert:          pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		adminCert:       adminCert,
		adminKey:        adminKey,
		caFile:          filepath.Join(dir, "ca.crt"),
		servingCertFile: filepath.Join(dir, "apiserver.crt"),
		servingKeyFile:  filepath.Join(dir, "apiserver.key"),
		saPublicFile:    filepath.Join(dir, "sa.pub"),
		saPrivateFile:   filepath.Join(dir, "sa.key"),
	}
	for file, data := range map[string][]byte{
		p.caFile:          p.caCert,
		p.servingCertFile: servingCert,
		p.servingKeyFile:  servingKey,
		p.saPublicFile:    pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPublicDER}),
		p.saPrivateFile:   saPrivate,
	} {
		if err := os.WriteFile(file, data, 0o600); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func privatePEM(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// serial returns a random 128-bit certificate serial number.
func serial() *big.Int {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return new(big.Int).SetBytes(b[:])
}
