package generator

import (
	"crypto/tls"
	"fmt"
	"sync"
	"sync/atomic"
)

// A certLoader serves a certificate and key from files and loads them
// again when they change; a failed load keeps the last good pair.
type certLoader struct {
	certFile, keyFile string
	mu                sync.Mutex // serializes Reload
	stamp             string
	cert              atomic.Pointer[tls.Certificate]
}

func newCertLoader(cfg *TLSConfig) (*certLoader, error) {
	c := &certLoader{certFile: cfg.CertFile, keyFile: cfg.KeyFile}
	if _, err := c.Reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// Reload loads the pair again when a file changed and reports whether it did.
func (c *certLoader) Reload() (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	stamp := fileStamp([]string{c.certFile, c.keyFile})
	if stamp == c.stamp && c.cert.Load() != nil {
		return false, nil
	}
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return false, fmt.Errorf("tls: loading %s and %s: %w", c.certFile, c.keyFile, err)
	}
	c.cert.Store(&cert)
	c.stamp = stamp
	return true, nil
}

func (c *certLoader) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return c.cert.Load(), nil
}

func (c *certLoader) tlsConfig() *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: c.getCertificate,
		NextProtos:     []string{"h2", "http/1.1"},
	}
}
