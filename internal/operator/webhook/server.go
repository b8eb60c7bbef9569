package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

// A Server is one HTTPS server of webhooks. Its certificate and key are
// read from files at start and read again, at the next handshake, when
// either file changes (a renewed Secret mounted in the pod).
type Server struct {
	// Addr is the address to listen on, host:port.
	Addr string
	// CertFile and KeyFile are the server's certificate (with its chain)
	// and private key, PEM.
	CertFile, KeyFile string
	// ClientCAFiles, when set, make the server ask for client
	// certificates signed by one of these CAs (PEM files).
	ClientCAFiles []string
	// Handler serves the requests.
	Handler http.Handler
	// Log gets the server's events.
	Log *slog.Logger

	certs certReloader
}

// Listen checks the certificates and opens the listener; Serve serves
// on it until ctx is done.
func (s *Server) Listen(ctx context.Context) (net.Listener, error) {
	s.certs = certReloader{certFile: s.CertFile, keyFile: s.KeyFile, log: s.Log}
	if _, err := s.certs.get(nil); err != nil {
		return nil, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: s.certs.get}
	if len(s.ClientCAFiles) > 0 {
		pool := x509.NewCertPool()
		for _, f := range s.ClientCAFiles {
			pem, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("reading the webhook client CA: %w", err)
			}
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("webhook client CA %s holds no PEM certificate", f)
			}
		}
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		cfg.ClientCAs = pool
	}
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", s.Addr)
	if err != nil {
		return nil, fmt.Errorf("listening for webhooks on %s: %w", s.Addr, err)
	}
	return tls.NewListener(l, cfg), nil
}

// Serve serves l until ctx is done, then shuts down, giving running
// reviews up to 5 s.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	srv := &http.Server{
		Handler:           s.Handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       90 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.Log.Handler(), slog.LevelDebug),
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	err := srv.Serve(l)
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// certReloader hands out the key pair of two files, read again when
// either file's size or modification time changes.
type certReloader struct {
	certFile, keyFile string
	log               *slog.Logger

	mu       sync.Mutex
	cert     *tls.Certificate
	stamp    string
	checked  time.Time
	lastFail string
}

func fileStamp(p string) (string, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d/%d", fi.Size(), fi.ModTime().UnixNano()), nil
}

func (r *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// Stat at most once a second: handshakes come in bursts.
	if r.cert != nil && time.Since(r.checked) < time.Second {
		return r.cert, nil
	}
	r.checked = time.Now()
	cs, cerr := fileStamp(r.certFile)
	ks, kerr := fileStamp(r.keyFile)
	if err := errors.Join(cerr, kerr); err != nil {
		if r.cert != nil {
			r.warn("the webhook certificate files cannot be read; serving the one read before", err)
			return r.cert, nil
		}
		return nil, fmt.Errorf("reading the webhook server certificate: %w; mount the certificate and key (tls.crt, tls.key) where the --*-webhook-server-cert/-key flags point", err)
	}
	stamp := cs + "|" + ks
	if r.cert != nil && stamp == r.stamp {
		return r.cert, nil
	}
	pair, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		if r.cert != nil {
			// A Secret being rewritten: the certificate and key may not
			// match for a moment.
			r.warn("the changed webhook certificate does not load; serving the one read before", err)
			return r.cert, nil
		}
		return nil, fmt.Errorf("loading the webhook server certificate %s and key %s: %w", r.certFile, r.keyFile, err)
	}
	if r.cert != nil {
		r.log.Info("webhook server certificate reloaded", "cert", r.certFile)
	}
	r.cert, r.stamp, r.lastFail = &pair, stamp, ""
	return r.cert, nil
}

func (r *certReloader) warn(msg string, err error) {
	if s := err.Error(); s != r.lastFail {
		r.lastFail = s
		r.log.Warn(msg, "cert", r.certFile, "error", err)
	}
}
