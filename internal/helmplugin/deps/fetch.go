package deps

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"helm.sh/helm/v4/pkg/getter"
	"helm.sh/helm/v4/pkg/helmpath"
	"helm.sh/helm/v4/pkg/registry"
	"helm.sh/helm/v4/pkg/repo/v1"
)

// A budget bounds the bytes read from the network for one fetch: the
// connections of its transport count what they read and fail past it.
// Helm's getters read whole responses into memory, so the bound is on the
// connection.
type budget struct {
	limit, left atomic.Int64
	over        atomic.Bool
}

func (b *budget) reset(n int64) {
	b.limit.Store(n)
	b.left.Store(n)
	b.over.Store(false)
}

func (b *budget) exceeded() bool { return b.over.Load() }

var errBudget = errors.New("response larger than the size limit")

type budgetConn struct {
	net.Conn
	b *budget
}

func (c *budgetConn) Read(p []byte) (int, error) {
	if c.b.left.Load() < 0 {
		c.b.over.Store(true)
		return 0, errBudget
	}
	n, err := c.Conn.Read(p)
	if c.b.left.Add(-int64(n)) < 0 {
		c.b.over.Store(true)
		return n, errBudget
	}
	return n, err
}

// transport is an HTTP transport for one fetch from a repository: its TLS
// settings from the repositories.yaml entry (caFile, certFile and keyFile,
// insecure_skip_tls_verify only when set), the proxy from the environment,
// its connections counted against b.
func (r *Resolver) transport(e *repo.Entry, b *budget) (*http.Transport, error) {
	tlsConf, err := tlsConfig(e)
	if err != nil {
		return nil, err
	}
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &budgetConn{Conn: c, b: b}, nil
		},
		TLSClientConfig:       tlsConf,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: r.opts.Timeout,
		DisableCompression:    true,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       30 * time.Second,
	}, nil
}

// tlsConfig builds the TLS settings of a repositories.yaml entry as Helm
// does: caFile replaces the system's roots, certFile and keyFile are a
// client certificate, insecure_skip_tls_verify skips verification.
func tlsConfig(e *repo.Entry) (*tls.Config, error) {
	conf := &tls.Config{MinVersion: tls.VersionTLS12}
	if e == nil {
		return conf, nil
	}
	conf.InsecureSkipVerify = e.InsecureSkipTLSVerify
	if e.CAFile != "" {
		pem, err := readConfig(e.CAFile)
		if err != nil {
			return nil, fmt.Errorf("repository %q: caFile: %w", e.Name, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("repository %q: caFile %s holds no PEM certificate", e.Name, e.CAFile)
		}
		conf.RootCAs = pool
	}
	if e.CertFile != "" || e.KeyFile != "" {
		if e.CertFile == "" || e.KeyFile == "" {
			return nil, fmt.Errorf("repository %q: certFile and keyFile go together", e.Name)
		}
		cert, err := tls.LoadX509KeyPair(e.CertFile, e.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("repository %q: client certificate: %w", e.Name, err)
		}
		conf.Certificates = []tls.Certificate{cert}
	}
	return conf, nil
}

// httpGet fetches a URL of an http(s) repository with Helm's HTTP getter:
// the entry's credentials go to the repository's host only (unless
// pass_credentials_all), at most limit bytes are read.
func (r *Resolver) httpGet(e *repo.Entry, u string, limit int64, what string) ([]byte, error) {
	b := &budget{}
	b.reset(limit)
	t, err := r.transport(e, b)
	if err != nil {
		return nil, &Error{Err: err, Hint: "fix the repository's entry in the Helm repositories configuration"}
	}
	defer t.CloseIdleConnections()
	g, err := getter.NewHTTPGetter()
	if err != nil {
		return nil, err
	}
	buf, err := g.Get(u,
		getter.WithURL(e.URL),
		getter.WithBasicAuth(e.Username, e.Password),
		getter.WithPassCredentialsAll(e.PassCredentialsAll),
		getter.WithTransport(t),
		getter.WithTimeout(r.opts.Timeout),
		getter.WithAcceptHeader("application/gzip,application/octet-stream,application/x-yaml,*/*"),
	)
	if err != nil || b.exceeded() {
		if err == nil {
			err = errBudget
		}
		return nil, r.netError(b, fmt.Errorf("fetching %s: %w", u, err), what)
	}
	return buf.Bytes(), nil
}

// index returns the repository's index: from memory or the cache
// directory while younger than IndexTTL, else fetched (and written to
// the cache directory as helm names it, <name>-index.yaml). When a fetch
// fails and an older copy is at hand, the older copy is used.
func (r *Resolver) index(src Source) (*repo.IndexFile, error) {
	key := sha256.Sum256([]byte("index\x00" + src.URL))
	if e, ok := r.indexes.Get(key); ok && r.now().Sub(e.fetched) < r.opts.IndexTTL {
		return e.idx, nil
	}
	v, err, _ := r.flight.Do("index\x00"+src.URL, func() (any, error) {
		old, ok := r.indexes.Get(key)
		if ok && r.now().Sub(old.fetched) < r.opts.IndexTTL {
			return old.idx, nil
		}
		name := src.entry.Name
		if name != filepath.Base(name) || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
			name = "strata-" + shortHash(src.URL)
		}
		fname := filepath.Join(r.opts.RepositoryCache, helmpath.CacheIndexFile(name))
		if fi, err := os.Stat(fname); err == nil && fi.Mode().IsRegular() && r.now().Sub(fi.ModTime()) < r.opts.IndexTTL && fi.Size() <= r.opts.MaxIndexBytes {
			if idx, err := repo.LoadIndexFile(fname); err == nil {
				r.indexes.Add(key, 1, &indexEntry{idx: idx, fetched: fi.ModTime()})
				return idx, nil
			}
		}
		u, err := repo.ResolveReferenceURL(src.URL, "index.yaml")
		if err != nil {
			return nil, &Error{Err: err}
		}
		data, err := r.httpGet(src.entry, u, r.opts.MaxIndexBytes, "the repository's index.yaml")
		if err == nil {
			err = writeAtomic(fname, data)
			if err != nil {
				err = &Error{Err: fmt.Errorf("writing the index to the repository cache: %w", err), Hint: "the Helm repository cache (--helm-repository-cache) must be a writable directory"}
			}
		}
		if err != nil {
			if ok {
				return old.idx, nil // stale, but what we have
			}
			if idx, lerr := repo.LoadIndexFile(fname); lerr == nil {
				return idx, nil // an older copy in the cache directory
			}
			return nil, err
		}
		idx, err := repo.LoadIndexFile(fname)
		if err != nil {
			return nil, &Error{Err: fmt.Errorf("the repository's index.yaml: %w", err), Hint: "the repository serves no valid index; check its URL"}
		}
		r.indexes.Add(key, 1, &indexEntry{idx: idx, fetched: r.now()})
		return idx, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*repo.IndexFile), nil
}

func writeAtomic(name string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(name), ".index-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), name)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// downloadArchive fetches a chart archive of an http(s) repository and
// checks it against the index's digest.
func (r *Resolver) downloadArchive(src Source, res resolution) ([]byte, error) {
	data, err := r.httpGet(src.entry, res.url, r.opts.MaxArchiveBytes, "the chart archive")
	if err != nil {
		return nil, err
	}
	if res.digest != "" {
		want := res.digest
		if _, after, ok := strings.Cut(want, ":"); ok {
			want = after
		}
		sum := sha256.Sum256(data)
		if !strings.EqualFold(hex.EncodeToString(sum[:]), want) {
			return nil, &Error{Version: res.version, Err: fmt.Errorf("the archive %s has SHA-256 %x, the repository's index says %s", res.url, sum, res.digest), Hint: "the repository's index and archive disagree; tell its owner"}
		}
	}
	return data, nil
}

// registryClient returns Helm's registry client for one fetch from an OCI
// registry: credentials from the registry config (or the entry of
// repositories.yaml that names the registry), TLS settings from that
// entry, the network bounded by the returned budget.
func (r *Resolver) registryClient(src Source) (*registry.Client, *budget, error) {
	b := &budget{}
	b.reset(r.opts.MaxIndexBytes)
	t, err := r.transport(src.entry, b)
	if err != nil {
		return nil, nil, &Error{Err: err, Hint: "fix the registry's entry in the Helm repositories configuration"}
	}
	creds := r.opts.RegistryConfig
	if creds == "" {
		creds = filepath.Join(r.opts.RepositoryCache, "strata-no-registry-config.json")
	}
	opts := []registry.ClientOption{
		registry.ClientOptHTTPClient(&http.Client{Transport: t, Timeout: r.opts.Timeout}),
		registry.ClientOptCredentialsFile(creds),
		registry.ClientOptEnableCache(true),
	}
	if src.entry != nil && src.entry.Username != "" && src.entry.Password != "" {
		opts = append(opts, registry.ClientOptBasicAuth(src.entry.Username, src.entry.Password))
	}
	c, err := registry.NewClient(opts...)
	if err != nil {
		return nil, nil, &Error{Err: fmt.Errorf("the registry client: %w", err), Hint: "check the registry configuration"}
	}
	return c, b, nil
}

// pullOCI pulls the chart of a resolved OCI reference and checks that
// the manifest is the one resolved.
func (r *Resolver) pullOCI(src Source, name string, res resolution) ([]byte, error) {
	client, b, err := r.registryClient(src)
	if err != nil {
		return nil, err
	}
	ref, tag, _ := strings.Cut(res.url[strings.LastIndexByte(res.url, '/')+1:], ":")
	ref = res.url[:strings.LastIndexByte(res.url, '/')+1] + ref
	b.reset(r.opts.MaxArchiveBytes + 1<<20) // the manifest, config and tokens besides
	out, err := client.Pull(ref + ":" + strings.ReplaceAll(tag, "+", "_"))
	if err != nil || b.exceeded() {
		if err == nil {
			err = errBudget
		}
		return nil, r.netError(b, fmt.Errorf("pulling %s: %w", res.url, err), "the chart")
	}
	if out.Manifest != nil && res.digest != "" && out.Manifest.Digest != res.digest {
		return nil, &Error{Version: res.version, Err: fmt.Errorf("the tag %s moved while it was pulled (%s, then %s)", res.url, res.digest, out.Manifest.Digest), Hint: "retry"}
	}
	if out.Chart == nil || len(out.Chart.Data) == 0 {
		return nil, &Error{Version: res.version, Err: fmt.Errorf("%s holds no chart", res.url)}
	}
	return out.Chart.Data, nil
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}
