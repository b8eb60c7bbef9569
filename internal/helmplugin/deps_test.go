package helmplugin_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry/handlers"
	"github.com/sirupsen/logrus"
	"golang.org/x/crypto/bcrypt"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/downloader"
	"helm.sh/helm/v4/pkg/getter"
	"helm.sh/helm/v4/pkg/registry"
	"helm.sh/helm/v4/pkg/repo/v1"

	_ "github.com/distribution/distribution/v3/registry/auth/htpasswd"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"

	"github.com/strata-dev/strata/internal/helmplugin"
	"github.com/strata-dev/strata/internal/params"
)

// A chartRepo is a Helm chart repository served by an httptest server:
// index.yaml and the packaged versions of testdata/deps/leaf, built by
// Helm's packaging and indexing code.
type chartRepo struct {
	srv                *httptest.Server
	dir                string
	user, pass         string
	archives, indexes  atomic.Int64
	gate               atomic.Pointer[chan struct{}] // when set, archive requests wait for it
	mu                 sync.Mutex
	corruptIndexDigest bool
}

func newChartRepo(t *testing.T, useTLS bool, user, pass string, versions ...string) *chartRepo {
	t.Helper()
	r := &chartRepo{dir: t.TempDir(), user: user, pass: pass}
	files := http.FileServer(http.Dir(r.dir))
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.user != "" {
			u, p, ok := req.BasicAuth()
			if !ok || u != r.user || p != r.pass {
				w.Header().Set("WWW-Authenticate", `Basic realm="charts"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		switch {
		case strings.HasSuffix(req.URL.Path, ".tgz"):
			r.archives.Add(1)
			if g := r.gate.Load(); g != nil {
				<-*g
			}
		case strings.HasSuffix(req.URL.Path, "/index.yaml"):
			r.indexes.Add(1)
		}
		files.ServeHTTP(w, req)
	})
	if useTLS {
		r.srv = httptest.NewTLSServer(h)
	} else {
		r.srv = httptest.NewServer(h)
	}
	t.Cleanup(r.srv.Close)
	r.add(t, versions...)
	return r
}

// add packages more versions of the leaf chart and indexes the directory
// again.
func (r *chartRepo) add(t *testing.T, versions ...string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range versions {
		ch, err := loader.LoadDir("testdata/deps/leaf")
		if err != nil {
			t.Fatal(err)
		}
		ch.Metadata.Version = v
		if _, err := chartutil.Save(ch, r.dir); err != nil {
			t.Fatal(err)
		}
	}
	idx, err := repo.IndexDirectory(r.dir, r.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if r.corruptIndexDigest {
		for _, vs := range idx.Entries {
			for _, v := range vs {
				v.Digest = strings.Repeat("ab", 32)
			}
		}
	}
	if err := idx.WriteFile(filepath.Join(r.dir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// caFile writes the server's certificate as a PEM file.
func caFile(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ca.pem")
	data := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// otherCA writes a CA certificate of its own, which signed no server
// here (httptest's servers share one certificate).
func otherCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "other CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "other-ca.pem")
	write(t, p, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	return p
}

// repositoriesYAML writes a Helm repositories.yaml.
func repositoriesYAML(t *testing.T, entries ...*repo.Entry) string {
	t.Helper()
	f := repo.NewFile()
	f.Add(entries...)
	p := filepath.Join(t.TempDir(), "repositories.yaml")
	if err := f.WriteFile(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// umbrella writes a repository holding an application chart (app/) whose
// Chart.yaml lists the given dependencies (YAML list items), and returns
// the request for it.
func umbrella(t *testing.T, deps string) *params.Request {
	t.Helper()
	root := t.TempDir()
	app := filepath.Join(root, "app")
	write(t, filepath.Join(app, "Chart.yaml"), "apiVersion: v2\nname: umbrella\nversion: 0.1.0\ndependencies:\n"+deps)
	write(t, filepath.Join(app, "templates", "own.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: own\n")
	return &params.Request{AppName: "demo", RepoRoot: root, AppPath: app}
}

func dep(name, version, repository string) string {
	return fmt.Sprintf("  - name: %s\n    version: %q\n    repository: %q\n", name, version, repository)
}

// leafVersion renders and returns the version the leaf chart's ConfigMap
// reports.
func leafVersion(t *testing.T, p *helmplugin.Plugin, req *params.Request) (string, error) {
	t.Helper()
	out, err := p.Generate(context.Background(), req)
	if err != nil {
		return "", err
	}
	for _, m := range out {
		var cm struct {
			Metadata struct{ Name string }
			Data     map[string]string
		}
		if err := json.Unmarshal([]byte(m), &cm); err != nil {
			t.Fatal(err)
		}
		if cm.Metadata.Name == "demo-leaf" {
			if cm.Data["greeting"] != "hello from leaf" {
				t.Errorf("leaf greeting = %q", cm.Data["greeting"])
			}
			return cm.Data["version"], nil
		}
	}
	t.Fatalf("no leaf ConfigMap in %q", out)
	return "", nil
}

func depOptions(t *testing.T, repoConfig string) helmplugin.DependencyOptions {
	return helmplugin.DependencyOptions{RepositoryConfig: repoConfig, RepositoryCache: t.TempDir(), Timeout: 30 * time.Second}
}

func TestDependencyHTTPRepository(t *testing.T) {
	plain := newChartRepo(t, false, "", "", "1.0.0", "1.1.0", "2.0.0", "1.2.0-rc.1")
	auth := newChartRepo(t, false, "user", "s3cret", "1.0.0", "1.1.0")
	secure := newChartRepo(t, true, "", "", "1.0.0", "1.1.0")
	secureAuth := newChartRepo(t, true, "user", "s3cret", "1.0.0", "1.1.0")
	tests := []struct {
		name    string
		entry   *repo.Entry
		version string
		want    string
		wantErr string
	}{
		{name: "range", entry: &repo.Entry{Name: "plain", URL: plain.srv.URL}, version: "^1.0.0", want: "1.1.0"},
		{name: "exact", entry: &repo.Entry{Name: "plain", URL: plain.srv.URL + "/"}, version: "1.0.0", want: "1.0.0"},
		{name: "prerelease asked for", entry: &repo.Entry{Name: "plain", URL: plain.srv.URL}, version: ">=1.2.0-0 <2.0.0", want: "1.2.0-rc.1"},
		{name: "no such version", entry: &repo.Entry{Name: "plain", URL: plain.srv.URL}, version: "^3.0.0",
			wantErr: `dependency "leaf" version "^3.0.0" from repository "` + plain.srv.URL + `": the repository's index has no version of "leaf" matching "^3.0.0"`},
		{name: "basic auth", entry: &repo.Entry{Name: "auth", URL: auth.srv.URL, Username: "user", Password: "s3cret"}, version: "~1.0.0", want: "1.0.0"},
		{name: "basic auth missing", entry: &repo.Entry{Name: "auth", URL: auth.srv.URL}, version: "~1.0.0",
			wantErr: "401 Unauthorized; check that the repository is reachable from the sidecar and its credentials in the Helm configuration"},
		{name: "basic auth wrong", entry: &repo.Entry{Name: "auth", URL: auth.srv.URL, Username: "user", Password: "guess"}, version: "~1.0.0", wantErr: "401 Unauthorized"},
		{name: "TLS with the CA", entry: &repo.Entry{Name: "secure", URL: secure.srv.URL, CAFile: caFile(t, secure.srv)}, version: "^1.0.0", want: "1.1.0"},
		{name: "TLS with the CA and basic auth", entry: &repo.Entry{Name: "secure", URL: secureAuth.srv.URL, CAFile: caFile(t, secureAuth.srv), Username: "user", Password: "s3cret"}, version: "^1.0.0", want: "1.1.0"},
		{name: "TLS without the CA", entry: &repo.Entry{Name: "secure", URL: secure.srv.URL}, version: "^1.0.0", wantErr: "certificate"},
		{name: "TLS with another CA", entry: &repo.Entry{Name: "secure", URL: secure.srv.URL, CAFile: otherCA(t)}, version: "^1.0.0", wantErr: "certificate"},
		{name: "TLS unverified when configured", entry: &repo.Entry{Name: "secure", URL: secure.srv.URL, InsecureSkipTLSVerify: true}, version: "1.0.0", want: "1.0.0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := helmplugin.New(helmplugin.Options{Dependencies: depOptions(t, repositoriesYAML(t, tc.entry))})
			req := umbrella(t, dep("leaf", tc.version, strings.TrimSuffix(tc.entry.URL, "/")))
			got, err := leafVersion(t, p, req)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one holding %q", err, tc.wantErr)
				}
				if !strings.Contains(err.Error(), `chart "umbrella": dependency "leaf"`) {
					t.Errorf("the error does not name the dependency: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("leaf version %s, want %s", got, tc.want)
			}
			if _, err := os.Stat(filepath.Join(req.AppPath, "charts")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("charts/ was written into the repository: %v", err)
			}
		})
	}
}

func TestDependencyRepositoryAliases(t *testing.T) {
	r := newChartRepo(t, false, "", "", "1.0.0")
	cfg := repositoriesYAML(t, &repo.Entry{Name: "other", URL: "https://charts.example.invalid"}, &repo.Entry{Name: "mine", URL: r.srv.URL})
	for _, ref := range []string{"@mine", "alias:mine"} {
		p := helmplugin.New(helmplugin.Options{Dependencies: depOptions(t, cfg)})
		got, err := leafVersion(t, p, umbrella(t, dep("leaf", "1.0.0", ref)))
		if err != nil || got != "1.0.0" {
			t.Errorf("%s: version %q, %v", ref, got, err)
		}
	}
	// One chart under two aliases: fetched once, rendered twice, as from
	// one archive in charts/.
	p := helmplugin.New(helmplugin.Options{Dependencies: depOptions(t, cfg)})
	r.archives.Store(0)
	twice := umbrella(t, dep("leaf", "1.0.0", "@mine")+"    alias: one\n"+dep("leaf", "1.0.0", r.srv.URL)+"    alias: two\n")
	out, err := p.Generate(context.Background(), twice)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(strings.Join(out, "\n"), `"name":"demo-leaf"`); n != 2 || r.archives.Load() != 1 {
		t.Errorf("two aliases: %d leaf ConfigMaps from %d downloads; want 2 from 1:\n%s", n, r.archives.Load(), out)
	}
	_, err = leafVersion(t, p, umbrella(t, dep("leaf", "1.0.0", "@nope")))
	if err == nil || !strings.Contains(err.Error(), `no repository named "nope"`) {
		t.Errorf("unknown alias: %v", err)
	}
}

// TestDependencyUnlistedRepository: a chart cannot make the sidecar reach
// a repository the configuration does not name, unless the operator
// allows it.
func TestDependencyUnlistedRepository(t *testing.T) {
	r := newChartRepo(t, false, "", "", "1.0.0")
	listed := repositoriesYAML(t, &repo.Entry{Name: "elsewhere", URL: r.srv.URL + "/other"})
	for _, cfg := range []string{"", listed} {
		p := helmplugin.New(helmplugin.Options{Dependencies: depOptions(t, cfg)})
		_, err := leafVersion(t, p, umbrella(t, dep("leaf", "1.0.0", r.srv.URL)))
		want := `dependency "leaf" version "1.0.0" from repository "` + r.srv.URL + `": the Helm configuration of the sidecar names no such repository; the operator must add it`
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--helm-allow-unlisted-repositories") {
			t.Errorf("config %q: error %v, want %q", cfg, err, want)
		}
		// An OCI registry no configuration names, too.
		_, err = leafVersion(t, p, umbrella(t, dep("leaf", "1.0.0", "oci://"+r.srv.Listener.Addr().String()+"/charts")))
		if err == nil || !strings.Contains(err.Error(), "names no such repository") {
			t.Errorf("config %q, OCI: error %v", cfg, err)
		}
	}
	if n := r.indexes.Load() + r.archives.Load(); n != 0 {
		t.Errorf("the unlisted repository was reached %d times", n)
	}
	o := depOptions(t, listed)
	o.AllowUnlistedRepositories = true
	p := helmplugin.New(helmplugin.Options{Dependencies: o})
	if got, err := leafVersion(t, p, umbrella(t, dep("leaf", "1.0.0", r.srv.URL))); err != nil || got != "1.0.0" {
		t.Errorf("allowed unlisted: %q, %v", got, err)
	}
}

// TestDependencyLock: Chart.lock written by Helm's own dependency manager
// pins the version although the repository has a newer one in range; a
// lock out of sync with Chart.yaml is an error, as in helm.
func TestDependencyLock(t *testing.T) {
	r := newChartRepo(t, false, "", "", "1.0.0")
	cfg := repositoriesYAML(t, &repo.Entry{Name: "charts", URL: r.srv.URL})
	req := umbrella(t, dep("leaf", "^1.0.0", r.srv.URL))
	m := &downloader.Manager{
		Out: io.Discard, ChartPath: req.AppPath, Getters: getter.Getters(),
		RepositoryConfig: cfg, RepositoryCache: t.TempDir(), ContentCache: t.TempDir(),
	}
	if err := m.Update(); err != nil {
		t.Fatalf("helm dependency update: %v", err)
	}
	if err := os.RemoveAll(filepath.Join(req.AppPath, "charts")); err != nil {
		t.Fatal(err)
	}
	r.add(t, "1.1.0")
	p := helmplugin.New(helmplugin.Options{Dependencies: depOptions(t, cfg)})
	if got, err := leafVersion(t, p, req); err != nil || got != "1.0.0" {
		t.Fatalf("with Chart.lock: version %q, %v; want the locked 1.0.0", got, err)
	}
	// Without the lock, the newest in range.
	lock, err := os.ReadFile(filepath.Join(req.AppPath, "Chart.lock"))
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(req.AppPath, "Chart.lock"))
	if got, err := leafVersion(t, p, req); err != nil || got != "1.1.0" {
		t.Fatalf("without Chart.lock: version %q, %v; want 1.1.0", got, err)
	}
	// Chart.yaml changed since the lock was written.
	write(t, filepath.Join(req.AppPath, "Chart.lock"), string(lock))
	write(t, filepath.Join(req.AppPath, "Chart.yaml"), "apiVersion: v2\nname: umbrella\nversion: 0.1.0\ndependencies:\n"+dep("leaf", "^1.1.0", r.srv.URL))
	_, err = leafVersion(t, p, req)
	if err == nil || !strings.Contains(err.Error(), "the lock file (Chart.lock) is out of sync with the dependencies file (Chart.yaml)") || !strings.Contains(err.Error(), "helm dependency update") {
		t.Fatalf("lock out of sync: %v", err)
	}
}

func TestDependencyArchiveChecks(t *testing.T) {
	r := newChartRepo(t, false, "", "", "1.0.0")
	r.corruptIndexDigest = true
	r.add(t)
	cfg := repositoriesYAML(t, &repo.Entry{Name: "charts", URL: r.srv.URL})
	p := helmplugin.New(helmplugin.Options{Dependencies: depOptions(t, cfg)})
	_, err := leafVersion(t, p, umbrella(t, dep("leaf", "1.0.0", r.srv.URL)))
	if err == nil || !strings.Contains(err.Error(), "the repository's index says abab") {
		t.Errorf("digest mismatch: %v", err)
	}
	r.corruptIndexDigest = false
	r.add(t)
	for _, o := range []func(*helmplugin.DependencyOptions){
		func(o *helmplugin.DependencyOptions) { o.MaxArchiveBytes = 100 },
		func(o *helmplugin.DependencyOptions) { o.MaxIndexBytes = 100 },
	} {
		opts := depOptions(t, cfg)
		o(&opts)
		p := helmplugin.New(helmplugin.Options{Dependencies: opts})
		_, err := leafVersion(t, p, umbrella(t, dep("leaf", "1.0.0", r.srv.URL)))
		if err == nil || !strings.Contains(err.Error(), "larger than the limit of 100 bytes") {
			t.Errorf("size limit: %v", err)
		}
	}
}

func TestDependencyTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	o := depOptions(t, repositoriesYAML(t, &repo.Entry{Name: "slow", URL: srv.URL}))
	o.Timeout = 100 * time.Millisecond
	p := helmplugin.New(helmplugin.Options{Dependencies: o})
	_, err := leafVersion(t, p, umbrella(t, dep("leaf", "1.0.0", srv.URL)))
	if err == nil || !strings.Contains(err.Error(), `from repository "`+srv.URL+`"`) || !strings.Contains(strings.ToLower(err.Error()), "timeout") {
		t.Errorf("error %v, want a timeout naming the repository", err)
	}
}

// TestDependencyCache: the second render takes the chart from the cache;
// concurrent renders of a fresh plugin fetch it once.
func TestDependencyCache(t *testing.T) {
	r := newChartRepo(t, false, "", "", "1.0.0", "1.1.0")
	cfg := repositoriesYAML(t, &repo.Entry{Name: "charts", URL: r.srv.URL})
	p := helmplugin.New(helmplugin.Options{Dependencies: depOptions(t, cfg)})
	for i := range 3 {
		if got, err := leafVersion(t, p, umbrella(t, dep("leaf", "^1.0.0", r.srv.URL))); err != nil || got != "1.1.0" {
			t.Fatalf("render %d: %q, %v", i, got, err)
		}
	}
	if a, x := r.archives.Load(), r.indexes.Load(); a != 1 || x != 1 {
		t.Errorf("three renders fetched the archive %d times and the index %d times; want once each", a, x)
	}

	// A plugin keeping no charts fetches each time (the index is kept).
	o := depOptions(t, cfg)
	o.CacheBytes = -1
	none := helmplugin.New(helmplugin.Options{Dependencies: o})
	r.archives.Store(0)
	for range 2 {
		if _, err := leafVersion(t, none, umbrella(t, dep("leaf", "^1.0.0", r.srv.URL))); err != nil {
			t.Fatal(err)
		}
	}
	if a := r.archives.Load(); a != 2 {
		t.Errorf("without a cache, two renders fetched the archive %d times", a)
	}

	fresh := helmplugin.New(helmplugin.Options{Dependencies: depOptions(t, cfg)})
	r.archives.Store(0)
	gate := make(chan struct{})
	r.gate.Store(&gate)
	const n = 8
	var started, done sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		req := umbrella(t, dep("leaf", "1.0.0", r.srv.URL))
		started.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			started.Done()
			v, err := leafVersion(t, fresh, req)
			if err == nil && v != "1.0.0" {
				err = fmt.Errorf("version %s", v)
			}
			errs <- err
		}()
	}
	started.Wait()
	close(gate)
	done.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if a := r.archives.Load(); a != 1 {
		t.Errorf("%d concurrent renders fetched the archive %d times; want once", n, a)
	}
}

// TestDependencyFile: file:// dependencies inside the repository load with
// no network and no configuration; paths and links out of it are refused.
func TestDependencyFile(t *testing.T) {
	p := helmplugin.New(helmplugin.Options{Dependencies: depOptions(t, "")})
	req := umbrella(t, dep("leaf", "^1.0.0", "file://../libs/leaf"))
	copyDir(t, "testdata/deps/leaf", filepath.Join(req.RepoRoot, "libs", "leaf"))
	if got, err := leafVersion(t, p, req); err != nil || got != "1.0.0" {
		t.Fatalf("file://: %q, %v", got, err)
	}
	// An absolute path is taken from the repository's root.
	req2 := umbrella(t, dep("leaf", "1.0.0", "file:///libs/leaf"))
	copyDir(t, "testdata/deps/leaf", filepath.Join(req2.RepoRoot, "libs", "leaf"))
	if got, err := leafVersion(t, p, req2); err != nil || got != "1.0.0" {
		t.Fatalf("file:///: %q, %v", got, err)
	}
	// Out of range.
	req3 := umbrella(t, dep("leaf", "^2.0.0", "file://../libs/leaf"))
	copyDir(t, "testdata/deps/leaf", filepath.Join(req3.RepoRoot, "libs", "leaf"))
	if _, err := leafVersion(t, p, req3); err == nil || !strings.Contains(err.Error(), `has version "1.0.0"`) {
		t.Errorf("out of range: %v", err)
	}

	outside := t.TempDir()
	copyDir(t, "testdata/deps/leaf", filepath.Join(outside, "leaf"))
	for name, ref := range map[string]string{
		"dot-dot":  "file://../../" + filepath.Base(outside) + "/leaf",
		"deep":     "file://../../../../../../../../../../" + strings.TrimPrefix(filepath.Join(outside, "leaf"), "/"),
		"absolute": "file://" + filepath.Join(outside, "leaf"),
		"link":     "file://../link",
	} {
		req := umbrella(t, dep("leaf", "1.0.0", ref))
		if err := os.Symlink(filepath.Join(outside, "leaf"), filepath.Join(req.RepoRoot, "link")); err != nil {
			t.Fatal(err)
		}
		_, err := leafVersion(t, p, req)
		if err == nil || !(strings.Contains(err.Error(), "outside the repository") || strings.Contains(err.Error(), "is not a directory in the repository") || strings.Contains(err.Error(), "no such file")) {
			t.Errorf("%s (%s): error %v, want a refusal", name, ref, err)
		}
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		write(t, filepath.Join(to, rel), string(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// ociRegistry is an in-process OCI registry (the distribution project's
// registry handler, as Helm's own tests use) on a TLS httptest server,
// with htpasswd credentials when user is set.
func ociRegistry(t *testing.T, user, pass string) (*httptest.Server, string) {
	t.Helper()
	config := &configuration.Configuration{}
	config.Storage = configuration.Storage{"inmemory": configuration.Parameters{}}
	config.Log.Level = "error"
	config.Log.AccessLog.Disabled = true
	if user != "" {
		hash, err := bcrypt.GenerateFromPassword([]byte(pass), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		htpasswd := filepath.Join(t.TempDir(), "htpasswd")
		write(t, htpasswd, user+":"+string(hash)+"\n")
		config.Auth = configuration.Auth{"htpasswd": configuration.Parameters{"realm": "test", "path": htpasswd}}
	}
	logrus.SetOutput(io.Discard) // the registry logs every request
	srv := httptest.NewTLSServer(handlers.NewApp(context.Background(), config))
	t.Cleanup(srv.Close)
	return srv, srv.Listener.Addr().String()
}

// push packages versions of the leaf chart and pushes them with Helm's
// registry client.
func push(t *testing.T, srv *httptest.Server, host, user, pass string, versions ...string) {
	t.Helper()
	opts := []registry.ClientOption{registry.ClientOptHTTPClient(srv.Client()), registry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "config.json"))}
	if user != "" {
		opts = append(opts, registry.ClientOptBasicAuth(user, pass))
	}
	c, err := registry.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, v := range versions {
		ch, err := loader.LoadDir("testdata/deps/leaf")
		if err != nil {
			t.Fatal(err)
		}
		ch.Metadata.Version = v
		file, err := chartutil.Save(ch, dir)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Push(data, host+"/charts/leaf:"+v); err != nil {
			t.Fatalf("push %s: %v", v, err)
		}
	}
}

func registryConfig(t *testing.T, host, user, pass string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.json")
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	write(t, p, fmt.Sprintf(`{"auths": {%q: {"auth": %q}}}`, host, auth))
	return p
}

func TestDependencyOCIRegistry(t *testing.T) {
	open, openHost := ociRegistry(t, "", "")
	push(t, open, openHost, "", "", "1.0.0", "1.1.0", "2.0.0")
	locked, lockedHost := ociRegistry(t, "robot", "t0ken")
	push(t, locked, lockedHost, "robot", "t0ken", "1.0.0", "1.1.0")

	tests := []struct {
		name          string
		entries       []*repo.Entry
		registry      string
		repository    string
		version, want string
		wantErr       string
	}{
		{name: "anonymous, range", entries: []*repo.Entry{{Name: "oci", URL: "oci://" + openHost + "/charts", CAFile: caFile(t, open)}},
			repository: "oci://" + openHost + "/charts", version: "^1.0.0", want: "1.1.0"},
		{name: "anonymous, exact, entry for the host", entries: []*repo.Entry{{Name: "oci", URL: "oci://" + openHost, CAFile: caFile(t, open)}},
			repository: "oci://" + openHost + "/charts", version: "2.0.0", want: "2.0.0"},
		{name: "alias", entries: []*repo.Entry{{Name: "oci", URL: "oci://" + openHost + "/charts", CAFile: caFile(t, open)}},
			repository: "@oci", version: "1.0.0", want: "1.0.0"},
		{name: "credentials from the registry config", entries: []*repo.Entry{{Name: "oci", URL: "oci://" + lockedHost + "/charts", CAFile: caFile(t, locked)}},
			registry: registryConfig(t, lockedHost, "robot", "t0ken"), repository: "oci://" + lockedHost + "/charts", version: "~1.0.0", want: "1.0.0"},
		{name: "credentials from repositories.yaml", entries: []*repo.Entry{{Name: "oci", URL: "oci://" + lockedHost + "/charts", CAFile: caFile(t, locked), Username: "robot", Password: "t0ken"}},
			repository: "oci://" + lockedHost + "/charts", version: "^1.0.0", want: "1.1.0"},
		{name: "no credentials", entries: []*repo.Entry{{Name: "oci", URL: "oci://" + lockedHost + "/charts", CAFile: caFile(t, locked)}},
			repository: "oci://" + lockedHost + "/charts", version: "1.0.0", wantErr: "basic credential not found"},
		{name: "wrong credentials", entries: []*repo.Entry{{Name: "oci", URL: "oci://" + lockedHost + "/charts", CAFile: caFile(t, locked)}},
			registry: registryConfig(t, lockedHost, "robot", "guess"), repository: "oci://" + lockedHost + "/charts", version: "1.0.0", wantErr: "401"},
		{name: "no CA", entries: []*repo.Entry{{Name: "oci", URL: "oci://" + openHost + "/charts"}},
			repository: "oci://" + openHost + "/charts", version: "1.0.0", wantErr: "certificate"},
		{name: "no such version", entries: []*repo.Entry{{Name: "oci", URL: "oci://" + openHost + "/charts", CAFile: caFile(t, open)}},
			repository: "oci://" + openHost + "/charts", version: "^5.0.0", wantErr: "could not locate a version matching"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := depOptions(t, repositoriesYAML(t, tc.entries...))
			o.RegistryConfig = tc.registry
			p := helmplugin.New(helmplugin.Options{Dependencies: o})
			got, err := leafVersion(t, p, umbrella(t, dep("leaf", tc.version, tc.repository)))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), `from repository "`+tc.repository+`"`) {
					t.Fatalf("error = %v, want one holding %q and naming the repository", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("version %s, want %s", got, tc.want)
			}
		})
	}
}
