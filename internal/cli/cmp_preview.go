package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"runtime"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/strata-dev/strata/internal/cmpserver/preview"
)

func newCmpPreviewCmd(g *globals) *cobra.Command {
	var (
		flags  localFlags
		listen string
		open   bool
	)
	cmd := &cobra.Command{
		Use:         "preview APPDIR --config PLUGIN.yaml|--builtin helm [--listen 127.0.0.1:0] [--open]",
		Annotations: map[string]string{serverAnnotation: "true"},
		Short:       "Serve a local page with the plugin's parameters form and the manifests its values render",
		Long: `Serve a page on loopback that draws the plugin's parameters form from its
announcement, as Argo CD's UI draws it, and renders APPDIR with the form's
values as strata cmp generate renders it (the same private copy of the
repository, sandbox, budgets and --timeout) each time a value changes. It
shows the manifests with a list of the resources, a diff against the render
with the defaults, the error next to the parameter at fault, the
spec.source.plugin block to paste into an Application and the equivalent
strata cmp generate command line. A dynamic announcement is read again each
time the page loads or asks for it.

The page's address holds a random token: only a browser given the printed
URL can use it, and requests from other sites (or under another Host name)
are refused. The page loads nothing from the network. It runs until
interrupted (Ctrl-C or SIGTERM).`,
		Example: `  strata cmp preview examples/cmp/trivial/app --config examples/cmp/trivial/plugin.yaml --open
  strata cmp preview examples/helm/chart --builtin helm --listen 127.0.0.1:8377`,
		Args: positional("APPDIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			log, err := g.logger()
			if err != nil {
				return err
			}
			l, err := flags.local(g, args[0])
			if err != nil {
				return err
			}
			if c, ok := l.Plugin.(interface{ Close() error }); ok {
				defer c.Close()
			}
			token, err := preview.NewToken()
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("--listen %s: %w", listen, err)
			}
			addr := ln.Addr().(*net.TCPAddr)
			if !addr.IP.IsLoopback() {
				log.Warn("cmp preview listens beyond loopback (--listen): anyone who can reach the address and learns the token can run the plugin on this machine", "address", addr.String())
			}
			h := &preview.Handler{Local: *l, Token: token, Hosts: preview.LoopbackHosts(addr.String()), Command: generateArgv(cmd, args[0])}
			// Renders run under the command's context: an interrupt cancels
			// them, and Shutdown waits for their private copies to go.
			srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
				BaseContext: func(net.Listener) context.Context { return cmd.Context() }}
			url := "http://" + addr.String() + "/" + token + "/"
			fmt.Fprintf(g.stdout, "strata cmp preview: open %s (Ctrl-C stops)\n", url)
			if open {
				if err := openBrowser(url); err != nil {
					log.Warn("--open: could not start a browser; open the URL by hand", "err", err)
				}
			}
			done := make(chan error, 1)
			go func() { done <- srv.Serve(ln) }()
			select {
			case err := <-done:
				return err
			case <-cmd.Context().Done():
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			return nil
		},
	}
	fs := cmd.Flags()
	flags.plugin.bind(fs)
	fs.StringVar(&flags.repoRoot, "repo-root", "", "the repository root (default: the enclosing git work tree, else APPDIR)")
	fs.StringVar(&flags.appName, "app-name", "", "the Application's name (default: the directory's name)")
	fs.StringVar(&flags.namespace, "namespace", "default", "the Application's destination namespace")
	fs.StringVar(&flags.kubeVersion, "kube-version", "", "KUBE_VERSION as the repo-server would set it")
	fs.StringArrayVar(&flags.apiVersions, "api-versions", nil, "KUBE_API_VERSIONS entries")
	fs.StringVar(&listen, "listen", "127.0.0.1:0", "address to serve the page on (port 0: any free port); keep it on loopback")
	fs.BoolVar(&open, "open", false, "open the page in the desktop's browser (xdg-open, or open on macOS)")
	return cmd
}

// generateArgv is the cmp generate command line with the flags given to
// cmp preview that cmp generate shares, for the page to show.
func generateArgv(cmd *cobra.Command, appDir string) []string {
	argv := []string{"strata", "cmp", "generate", appDir}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		switch f.Name {
		case "listen", "open":
			return
		}
		if s, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range s.GetSlice() {
				argv = append(argv, "--"+f.Name, v)
			}
			return
		}
		if f.Value.Type() == "bool" {
			argv = append(argv, "--"+f.Name+"="+f.Value.String())
			return
		}
		argv = append(argv, "--"+f.Name, f.Value.String())
	})
	return argv
}

// openBrowser starts the desktop's browser on url (argv, no shell).
func openBrowser(url string) error {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	c := exec.Command(name, url)
	if err := c.Start(); err != nil {
		return err
	}
	go c.Wait()
	return nil
}
