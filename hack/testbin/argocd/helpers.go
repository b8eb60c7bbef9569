package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/spf13/cobra"

	"github.com/argoproj/argo-cd/v3/reposerver/apiclient"
)

// newMiniredis serves an in-memory Redis until SIGTERM or SIGINT.
func newMiniredis() *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:          "miniredis",
		Short:        "Serve an in-memory Redis (tests only)",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m := miniredis.NewMiniRedis()
			if err := m.StartAddr(addr); err != nil {
				return fmt.Errorf("miniredis on %s: %w", addr, err)
			}
			defer m.Close()
			fmt.Printf("listening on %s\n", m.Addr())
			stop := make(chan os.Signal, 1)
			signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
			<-stop
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "address to listen on")
	return cmd
}

// newAppDetails calls the repo-server's GetAppDetails with Argo CD's client.
func newAppDetails() *cobra.Command {
	var addr string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:          "app-details",
		Short:        "Call the repo-server's GetAppDetails: query JSON on stdin, answer JSON on stdout (tests only)",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var q apiclient.RepoServerAppDetailsQuery
			dec := json.NewDecoder(os.Stdin)
			dec.DisallowUnknownFields()
			if err := dec.Decode(&q); err != nil {
				return fmt.Errorf("reading the RepoServerAppDetailsQuery from stdin: %w", err)
			}
			conn, client, err := apiclient.NewRepoServerClientset(addr, int(timeout.Seconds()), apiclient.TLSConfiguration{DisableTLS: true}).NewRepoServerClient()
			if err != nil {
				return fmt.Errorf("connecting to the repo-server at %s: %w", addr, err)
			}
			defer conn.Close()
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			res, err := client.GetAppDetails(ctx, &q)
			if err != nil {
				return fmt.Errorf("GetAppDetails: %w", err)
			}
			enc := json.NewEncoder(os.Stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(res)
		},
	}
	cmd.Flags().StringVar(&addr, "repo-server", "", "the repo-server's HOST:PORT (plain gRPC: started with --disable-tls)")
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "bound on the call")
	return cmd
}

// generateResult is what generate-manifest prints for each request: the
// time of each call and what the last one returned.
type generateResult struct {
	Seconds    []float64 `json:"seconds"`
	Manifests  int       `json:"manifests"`
	SourceType string    `json:"sourceType"`
}

// newGenerateManifest calls the repo-server's GenerateManifest with Argo
// CD's client, as the application controller does: for each of count
// rounds, each request of the list in turn (interleaved, so that the
// machine's drift weighs on all alike), over one connection. It prints how
// long each call took: the benchmark through the real repo-server (its
// checkout, its tarball to a sidecar or its helm run, its parsing of the
// answer).
func newGenerateManifest() *cobra.Command {
	var addr string
	var timeout time.Duration
	var count int
	cmd := &cobra.Command{
		Use:          "generate-manifest",
		Short:        "Call the repo-server's GenerateManifest: a JSON list of ManifestRequests on stdin, COUNT rounds, timings JSON on stdout (tests only)",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if count < 1 {
				return fmt.Errorf("--count must be at least 1, not %d", count)
			}
			var reqs []*apiclient.ManifestRequest
			dec := json.NewDecoder(os.Stdin)
			dec.DisallowUnknownFields()
			if err := dec.Decode(&reqs); err != nil {
				return fmt.Errorf("reading the list of ManifestRequests from stdin: %w", err)
			}
			if len(reqs) == 0 {
				return fmt.Errorf("the list of ManifestRequests on stdin is empty")
			}
			conn, client, err := apiclient.NewRepoServerClientset(addr, int(timeout.Seconds()), apiclient.TLSConfiguration{DisableTLS: true}).NewRepoServerClient()
			if err != nil {
				return fmt.Errorf("connecting to the repo-server at %s: %w", addr, err)
			}
			defer conn.Close()
			out := make([]generateResult, len(reqs))
			for i := 0; i < count; i++ {
				for j, q := range reqs {
					ctx, cancel := context.WithTimeout(context.Background(), timeout)
					start := time.Now()
					res, err := client.GenerateManifest(ctx, q)
					took := time.Since(start)
					cancel()
					if err != nil {
						return fmt.Errorf("GenerateManifest of request %d (%s), round %d of %d: %w", j, q.AppName, i+1, count, err)
					}
					out[j].Seconds = append(out[j].Seconds, took.Seconds())
					out[j].Manifests, out[j].SourceType = len(res.Manifests), res.SourceType
				}
			}
			return json.NewEncoder(os.Stdout).Encode(out)
		},
	}
	cmd.Flags().StringVar(&addr, "repo-server", "", "the repo-server's HOST:PORT (plain gRPC: started with --disable-tls)")
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "bound on each call")
	cmd.Flags().IntVar(&count, "count", 1, "rounds of calls")
	return cmd
}
