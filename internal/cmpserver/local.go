package cmpserver

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/strata-dev/strata/internal/cmpserver/tarball"
	"github.com/strata-dev/strata/internal/params"
)

// Local runs a plugin on a local checkout the way the sidecar runs it for
// Argo CD: the repository is packed as the repo-server packs it, unpacked
// into a private directory by the same extractor, and the plugin runs
// there with the environment Argo CD would give it. The checkout itself is
// never written to. A plugin that never writes the repository
// (Info.ReadOnlyRepo) reads the checkout in place instead, once it is
// checked as the extractor checks a repository: no symbolic link may lead
// outside the repository root.
type Local struct {
	Plugin Plugin
	// RepoRoot is the repository's root; AppDir the application directory
	// inside it.
	RepoRoot, AppDir string

	AppName, Namespace, Project string
	Revision, RepoURL           string
	KubeVersion                 string
	APIVersions                 []string
	// Env holds extra KEY=VALUE entries, added after the standard ones:
	// ARGOCD_ENV_* as an Application's plugin env gives them, or overrides.
	Env        []string
	Parameters []params.Parameter
	Limits     tarball.Limits
	// TempDir is where the private copy is made; "" is os.TempDir().
	TempDir string
}

// Request builds the request Argo CD would send, with the repository
// unpacked into a private directory; cleanup removes it.
func (l *Local) Request(ctx context.Context) (req *params.Request, cleanup func(), err error) {
	root, err := filepath.Abs(l.RepoRoot)
	if err != nil {
		return nil, nil, err
	}
	app, err := filepath.Abs(l.AppDir)
	if err != nil {
		return nil, nil, err
	}
	rel, err := filepath.Rel(root, app)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return nil, nil, fmt.Errorf("the application directory %s is not inside the repository root %s", l.AppDir, l.RepoRoot)
	}
	if l.Plugin.Info().ReadOnlyRepo {
		if err := checkInPlace(ctx, root); err != nil {
			return nil, nil, err
		}
		return l.request(root, "", app, rel), func() {}, nil
	}
	work, err := os.MkdirTemp(l.TempDir, "strata-cmp-")
	if err != nil {
		return nil, nil, err
	}
	remove := func() { os.RemoveAll(work) }
	defer func() {
		if err != nil {
			remove() // cleanup is nil by then
		}
	}()
	// Pack and unpack through a pipe: the same extractor, limits and
	// checks as a request from the repo-server.
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(packRepo(root, pw)) }()
	repo, tmp := filepath.Join(work, "repo"), filepath.Join(work, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return nil, nil, err
	}
	if err := tarball.Extract(ctx, pr, repo, tarball.Options{Limits: l.Limits, PreserveFileMode: l.Plugin.Info().PreserveFileMode}); err != nil {
		pr.CloseWithError(err)
		return nil, nil, fmt.Errorf("copying the repository: %w", err)
	}
	return l.request(repo, tmp, app, rel), remove, nil
}

// request builds the request for the repository at repo, the application
// being rel inside it (app is its directory in the checkout, for its
// default name); tmp is the commands' private temporary directory ("" for
// a plugin that reads the checkout in place and runs no command).
func (l *Local) request(repo, tmp, app, rel string) *params.Request {
	name := l.AppName
	if name == "" {
		name = filepath.Base(app)
	}
	env := []string{
		"ARGOCD_APP_NAME=" + name,
		"ARGOCD_APP_NAMESPACE=" + orDefault(l.Namespace, "default"),
		"ARGOCD_APP_PROJECT_NAME=" + orDefault(l.Project, "default"),
		"ARGOCD_APP_REVISION=" + l.Revision,
		"ARGOCD_APP_REVISION_SHORT=" + short(l.Revision, 7),
		"ARGOCD_APP_REVISION_SHORT_8=" + short(l.Revision, 8),
		"ARGOCD_APP_SOURCE_REPO_URL=" + l.RepoURL,
		"ARGOCD_APP_SOURCE_PATH=" + filepath.ToSlash(rel),
		"ARGOCD_APP_SOURCE_TARGET_REVISION=" + l.Revision,
		"KUBE_VERSION=" + l.KubeVersion,
		"KUBE_API_VERSIONS=" + strings.Join(l.APIVersions, ","),
	}
	return &params.Request{
		AppName:    name,
		RepoRoot:   repo,
		AppPath:    filepath.Join(repo, rel),
		TempDir:    tmp,
		Env:        append(env, l.Env...),
		Parameters: l.Parameters,
	}
}

// checkInPlace checks a checkout a plugin is to read in place: every
// symbolic link in it (outside .git) must resolve inside root, as the
// extractor requires of a repository's links. It reads directories and
// links only, no file's contents.
func checkInPlace(ctx context.Context, root string) error {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return err
	}
	inside := func(p string) bool {
		rel, err := filepath.Rel(realRoot, p)
		return err == nil && (rel == "." || filepath.IsLocal(rel))
	}
	return filepath.WalkDir(realRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" && path != realRoot {
				return filepath.SkipDir
			}
			return ctx.Err()
		}
		if d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		rel, _ := filepath.Rel(realRoot, path)
		target, err := filepath.EvalSymlinks(path)
		if errors.Is(err, fs.ErrNotExist) {
			// A dangling link: where it points, as written.
			var link string
			if link, err = os.Readlink(path); err != nil {
				return err
			}
			target = filepath.Clean(link)
			if !filepath.IsAbs(link) {
				target = filepath.Join(filepath.Dir(path), link)
			}
		}
		switch {
		case err != nil:
			return fmt.Errorf("the repository's symbolic link %s does not resolve: %w", filepath.ToSlash(rel), err)
		case !inside(target):
			return fmt.Errorf("the repository's symbolic link %s leads outside the repository root %s (to %s); the sidecar refuses such a repository", filepath.ToSlash(rel), root, target)
		}
		return nil
	})
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func short(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// packRepo writes a gzipped tar of root, as the repo-server sends it:
// regular files, directories and symbolic links; .git is left out.
func packRepo(root string, w io.Writer) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil || rel == "." {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(path); err != nil {
				return err
			}
		} else if !info.Mode().IsRegular() && !info.IsDir() {
			return nil // sockets, devices: not part of a repository
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if info.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uname, hdr.Gname, hdr.Uid, hdr.Gid = "", "", 0, 0
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return fmt.Errorf("packing %s: %w", root, err)
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}
