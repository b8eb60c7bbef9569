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
