package cmpserver_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/protobuf/proto"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/cmpserver/pluginpb"
	"github.com/strata-dev/strata/internal/cmpserver/tarball"
	"github.com/strata-dev/strata/internal/eventually"
)

func TestKeepAliveMinFromEnv(t *testing.T) {
	for _, tc := range []struct {
		env     []string
		want    time.Duration
		wantErr bool
	}{
		{env: nil, want: 0},
		{env: []string{"ARGOCD_GRPC_KEEP_ALIVE_MIN="}, want: 0},
		{env: []string{"ARGOCD_GRPC_KEEP_ALIVE_MIN=15s"}, want: 15 * time.Second},
		{env: []string{"ARGOCD_GRPC_KEEP_ALIVE_MIN=1s", "ARGOCD_GRPC_KEEP_ALIVE_MIN=250ms"}, want: 250 * time.Millisecond},
		{env: []string{"ARGOCD_GRPC_KEEP_ALIVE_MIN=10"}, wantErr: true},
		{env: []string{"ARGOCD_GRPC_KEEP_ALIVE_MIN=-1s"}, wantErr: true},
		{env: []string{"ARGOCD_GRPC_KEEP_ALIVE_MIN=0s"}, wantErr: true},
	} {
		got, err := cmpserver.KeepAliveMinFromEnv(tc.env)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("KeepAliveMinFromEnv(%q) = %v, %v; want %v, error %v", tc.env, got, err, tc.want, tc.wantErr)
		}
	}
}

// TestKeepAlive pings the server the way Argo CD's repo-server does while
// it waits for a render: every 2×ARGOCD_GRPC_KEEP_ALIVE_MIN. With Argo CD's
// default (10 s, pings every 20 s) a render would have to last minutes to
// show that no ping is refused, so both sides are scaled down by the same
// factor: the server's minimum is 40 ms (what ARGOCD_GRPC_KEEP_ALIVE_MIN=40ms
// gives), the client pings every 80 ms through a render of 1 s, a dozen
// pings. gRPC's own default, one ping in 5 minutes, answers the third with
// GOAWAY too_many_pings, which the second case shows: the same client is
// refused by a server that keeps gRPC's default policy, scaled the same way.
//
// The client is a bare HTTP/2 connection, because grpc-go's client will not
// ping more often than every 10 s.
func TestKeepAlive(t *testing.T) {
	for _, tc := range []struct {
		name         string
		min, every   time.Duration
		wantGoAway   bool
		wantManifest bool
	}{
		{name: "pings every 2×min, as Argo CD's client", min: 40 * time.Millisecond, every: 80 * time.Millisecond, wantManifest: true},
		{name: "pings more often than min", min: 2 * time.Second, every: 80 * time.Millisecond, wantGoAway: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			block := make(chan struct{})
			socket := serveKeepAlive(t, catPlugin{block: block}, tc.min)
			go func() {
				time.Sleep(time.Second) // a long render: many pings meanwhile
				close(block)
			}()
			manifests, goAway, err := rawGenerate(t, socket, tc.every, tarGz(t, map[string]string{"app/m.json": `{"kind":"ConfigMap"}`}))
			if tc.wantGoAway {
				if goAway == nil || goAway.ErrCode != http2.ErrCodeEnhanceYourCalm || !bytes.Contains(goAway.DebugData(), []byte("too_many_pings")) {
					t.Fatalf("GOAWAY %v, error %v; want too_many_pings", goAway, err)
				}
				return
			}
			if err != nil || goAway != nil {
				t.Fatalf("Generate with pings every %v: GOAWAY %v, error %v", tc.every, goAway, err)
			}
			if len(manifests) != 1 {
				t.Fatalf("manifests %q, want 1", manifests)
			}
		})
	}
}

func serveKeepAlive(t *testing.T, p cmpserver.Plugin, min time.Duration) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cmp") // short: unix socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	store, err := tarball.NewStore(filepath.Join(dir, "repos"), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	srv := &cmpserver.Server{Plugin: p, Store: store, ShutdownGrace: 5 * time.Second, KeepAliveMin: min}
	socket := filepath.Join(dir, "ka.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, socket) }()
	t.Cleanup(func() { cancel(); <-done })
	eventually.True(t, "the server listens on "+socket, func() (bool, string) {
		c, err := net.Dial("unix", socket)
		if err != nil {
			return false, err.Error()
		}
		c.Close()
		return true, ""
	})
	return socket
}

// frameSender sends gRPC messages of one stream as HTTP/2 DATA frames.
type frameSender struct {
	fr     *http2.Framer
	stream uint32
}

func (s frameSender) Send(m *pluginpb.AppStreamRequest) error {
	b, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	msg := make([]byte, 5, 5+len(b))
	binary.BigEndian.PutUint32(msg[1:], uint32(len(b)))
	msg = append(msg, b...)
	for len(msg) > 0 {
		n := min(len(msg), 16<<10)
		if err := s.fr.WriteData(s.stream, false, msg[:n]); err != nil {
			return err
		}
		msg = msg[n:]
	}
	return nil
}

// rawGenerate calls GenerateManifest over a bare HTTP/2 connection,
// pinging every `every` until the answer comes. It returns the manifests,
// or the GOAWAY frame the server sent, or why the call failed.
func rawGenerate(t *testing.T, socket string, every time.Duration, tgz []byte) ([]string, *http2.GoAwayFrame, error) {
	t.Helper()
	conn, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	// A window large enough for the request, so that sending never waits
	// for the server's WINDOW_UPDATE, which only the reader below sees.
	if err := fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 30}); err != nil {
		t.Fatal(err)
	}
	var hdr bytes.Buffer
	enc := hpack.NewEncoder(&hdr)
	for _, f := range [][2]string{
		{":method", "POST"}, {":scheme", "http"}, {":authority", "localhost"},
		{":path", "/plugin.ConfigManagementPluginService/GenerateManifest"},
		{"content-type", "application/grpc"}, {"te", "trailers"},
	} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	const stream = 1
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: hdr.Bytes(), EndHeaders: true}); err != nil {
		t.Fatal(err)
	}

	// The reader owns the connection's input; writes below share fr's
	// writer with nothing else but the pinger, which takes turns with
	// them through mu.
	type result struct {
		manifests []string
		goAway    *http2.GoAwayFrame
		err       error
	}
	done := make(chan result, 1)
	go func() {
		dec := hpack.NewDecoder(4096, nil)
		var body []byte
		status := ""
		message := ""
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				done <- result{err: err}
				return
			}
			switch f := f.(type) {
			case *http2.GoAwayFrame:
				g := *f
				g.FrameHeader = f.FrameHeader
				debug := append([]byte(nil), f.DebugData()...)
				done <- result{goAway: &g, err: fmt.Errorf("GOAWAY %v %q", f.ErrCode, debug)}
				return
			case *http2.DataFrame:
				body = append(body, f.Data()...)
			case *http2.HeadersFrame:
				fields, err := dec.DecodeFull(f.HeaderBlockFragment())
				if err != nil {
					done <- result{err: err}
					return
				}
				for _, h := range fields {
					switch h.Name {
					case "grpc-status":
						status = h.Value
					case "grpc-message":
						message = h.Value
					}
				}
				if f.StreamEnded() {
					if status != "0" {
						done <- result{err: fmt.Errorf("grpc-status %s: %s", status, message)}
						return
					}
					if len(body) < 5 {
						done <- result{err: errors.New("no response message")}
						return
					}
					var resp pluginpb.ManifestResponse
					if err := proto.Unmarshal(body[5:], &resp); err != nil {
						done <- result{err: err}
						return
					}
					done <- result{manifests: resp.GetManifests()}
					return
				}
			case *http2.RSTStreamFrame:
				done <- result{err: fmt.Errorf("stream reset: %v", f.ErrCode)}
				return
			}
		}
	}()

	send := frameSender{fr: fr, stream: stream}
	if err := cmpserver.SendApp(send, &pluginpb.ManifestRequestMetadata{AppName: "app", AppRelPath: "app"}, tgz); err != nil {
		t.Fatal(err)
	}
	if err := fr.WriteData(stream, true, nil); err != nil {
		t.Fatal(err)
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	var n uint64
	for {
		select {
		case r := <-done:
			return r.manifests, r.goAway, r.err
		case <-tick.C:
			n++
			var data [8]byte
			binary.BigEndian.PutUint64(data[:], n)
			if err := fr.WritePing(false, data); err != nil {
				r := <-done
				return r.manifests, r.goAway, r.err
			}
		}
	}
}
