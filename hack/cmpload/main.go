// Command cmpload is a load and fault run of the plugin sidecar under its
// shipped memory limit (make load-cmp; see docs/benchmarks.md): it starts
// `strata cmp serve --config` with STRATA_MEMORY_LIMIT set to deploy/cmp's
// limit (1Gi), and for -duration runs normal clients (applications of 300
// ConfigMaps) beside hostile ones (the inputs of issue 23: a manifest of a
// 33 MB map just under --max-manifest-values, four concurrent 25 MB
// lists). A watchdog samples the sidecar's RssAnon every 5 ms and kills it
// past the limit, as the kernel would. It prints the errors the normal
// clients saw (the goal is none), what the hostile clients got, and the
// peak memory, and exits 1 when a normal client saw an error or the limit
// was passed. With -disk, the plugin runs the repository's run.sh first
// when it has one, and hostile clients write past the disk budgets (a
// 50 GB file, a million empty files) and print without end (`yes`), under
// -written and -written-total.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/cmpserver/pluginpb"
	"github.com/strata-dev/strata/internal/rsswatch"
)

const plugin = `apiVersion: argoproj.io/v1alpha1
kind: ConfigManagementPlugin
metadata:
  name: load
spec:
  generate:
    command: [cat, out.yaml]
`

// diskPlugin runs the repository's run.sh, when it has one, before
// printing out.yaml.
const diskPlugin = `apiVersion: argoproj.io/v1alpha1
kind: ConfigManagementPlugin
metadata:
  name: load
spec:
  generate:
    command: [sh, -c, '[ ! -e run.sh ] || . ./run.sh; cat out.yaml']
`

func main() {
	var (
		strata   = flag.String("strata", "", "the strata binary (required)")
		limit    = flag.Int64("limit", 1<<30, "the sidecar's memory limit, bytes (deploy/cmp: 1Gi)")
		duration = flag.Duration("duration", 3*time.Minute, "how long to run")
		normal   = flag.Int("normal", 8, "normal clients")
		sandbox  = flag.Bool("sandbox", false, "run the plugin's commands in the Landlock sandbox (needs a kernel with Landlock)")
		disk     = flag.Bool("disk", false, "add hostile clients that write past the disk budgets and print without end")
		written  = flag.Int64("written", 64<<20, "with -disk: the sidecar's --max-written-bytes")
		total    = flag.Int64("written-total", 256<<20, "with -disk: the sidecar's --max-written-bytes-total")
	)
	flag.Parse()
	if *strata == "" {
		fmt.Fprintln(os.Stderr, "cmpload: -strata is required")
		os.Exit(2)
	}
	o := options{disk: *disk, written: *written, writtenTotal: *total}
	if err := run(*strata, *limit, *duration, *normal, *sandbox, o); err != nil {
		fmt.Fprintln(os.Stderr, "cmpload:", err)
		os.Exit(1)
	}
}

// options are the -disk run's.
type options struct {
	disk                  bool
	written, writtenTotal int64
}

func run(strata string, limit int64, duration time.Duration, normal int, sandbox bool, o options) error {
	dir, err := os.MkdirTemp("", "cmpload")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	config := plugin
	if o.disk {
		config = diskPlugin
	}
	if err := os.WriteFile(filepath.Join(dir, "plugin.yaml"), []byte(config), 0o644); err != nil {
		return err
	}
	args := []string{"cmp", "serve", "--config", filepath.Join(dir, "plugin.yaml"), "--socket-dir", dir, "--cache-dir", filepath.Join(dir, "cache"), "--log-format", "json",
		"--max-written-bytes", strconv.FormatInt(o.written, 10), "--max-written-bytes-total", strconv.FormatInt(o.writtenTotal, 10)}
	if !sandbox {
		args = append(args, "--insecure-no-sandbox")
	}
	cmd := exec.Command(strata, args...)
	cmd.Env = append(os.Environ(), "STRATA_MEMORY_LIMIT="+strconv.FormatInt(limit, 10), "GOMEMLIMIT=")
	logFile, err := os.Create(filepath.Join(dir, "sidecar.log"))
	if err != nil {
		return err
	}
	cmd.Stderr = logFile
	if err := cmd.Start(); err != nil {
		return err
	}
	var peak atomic.Int64
	killed := make(chan struct{})
	go rsswatch.Watch(cmd.Process.Pid, limit, &peak, killed)
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	sock := filepath.Join(dir, "load.sock")
	for i := 0; ; i++ {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			break
		}
		if i > 300 {
			return errors.New("the sidecar did not listen within 30 s; see its log")
		}
		time.Sleep(100 * time.Millisecond)
	}
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(cmpserver.DefaultMaxMessageSize)))
	if err != nil {
		return err
	}
	defer conn.Close()
	client := pluginpb.NewConfigManagementPluginServiceClient(conn)

	bigMap := tarOf(hostileMap(33 << 20))
	bigList := tarOf(hostileList(25 << 20))
	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	var (
		wg                  sync.WaitGroup
		mu                  sync.Mutex
		normalOK, hostileOK int
		normalErrs          []string
		hostileCodes        = map[string]int{}
	)
	for i := range normal {
		wg.Go(func() {
			app := tarOf(normalApp(fmt.Sprintf("app%d", i)))
			for ctx.Err() == nil {
				n, err := generate(client, fmt.Sprintf("normal%d", i), app)
				if ctx.Err() != nil && err != nil {
					return
				}
				mu.Lock()
				if err == nil && n != 300 {
					err = fmt.Errorf("%d manifests, want 300", n)
				}
				if err != nil {
					normalErrs = append(normalErrs, err.Error())
				} else {
					normalOK++
				}
				mu.Unlock()
			}
		})
	}
	hostile := func(name string, tgz []byte) {
		for ctx.Err() == nil {
			_, err := generate(client, name, tgz)
			if ctx.Err() != nil {
				return
			}
			mu.Lock()
			if err == nil {
				hostileOK++
			} else {
				hostileCodes[status.Code(err).String()]++
			}
			mu.Unlock()
		}
	}
	wg.Go(func() { hostile("hostile-map", bigMap) })
	for i := range 4 {
		wg.Go(func() { hostile(fmt.Sprintf("hostile-list%d", i), bigList) })
	}
	var peakDisk atomic.Int64
	if o.disk {
		small := tarOf(normalApp("writer"))
		for name, script := range map[string]string{
			"hostile-bigfile": `head -c 50000000000 /dev/zero > "$TMPDIR/big"; sleep 60`,
			"hostile-files":   `mkdir "$TMPDIR/d"; i=0; while [ $i -lt 1000000 ]; do : > "$TMPDIR/d/$i"; i=$((i+1)); done`,
			"hostile-yes":     `yes`,
		} {
			tgz := withScript(small, script)
			wg.Go(func() { hostile(name, tgz) })
		}
		work := filepath.Join(dir, "cache")
		base, _ := volumeUsed(dir)
		wg.Go(func() {
			for ctx.Err() == nil {
				if used, ok := volumeUsed(work); ok && used-base > peakDisk.Load() {
					peakDisk.Store(used - base)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	start := time.Now()
	wg.Wait()
	fmt.Printf("sidecar: strata cmp serve --config, STRATA_MEMORY_LIMIT=%d (%d MiB), %s\n", limit, limit>>20, time.Since(start).Round(time.Second))
	fmt.Printf("normal clients: %d, requests ok: %d, errors: %d\n", normal, normalOK, len(normalErrs))
	for i, e := range normalErrs {
		if i == 5 {
			fmt.Printf("  ... %d more\n", len(normalErrs)-5)
			break
		}
		fmt.Printf("  %s\n", e)
	}
	what := "1 × 33 MB map, 4 × 25 MB lists"
	if o.disk {
		what += ", a 50 GB file, a million empty files, yes"
	}
	fmt.Printf("hostile clients: %s; answered ok: %d, errors by code: %v\n", what, hostileOK, hostileCodes)
	if o.disk {
		fmt.Printf("disk budgets: --max-written-bytes %d MiB, --max-written-bytes-total %d MiB; peak growth of the work volume: %d MiB (the whole file system's: other writers count)\n",
			o.written>>20, o.writtenTotal>>20, peakDisk.Load()>>20)
	}
	fmt.Printf("peak RssAnon: %d MiB of %d MiB\n", peak.Load()>>20, limit>>20)
	select {
	case <-killed:
		return fmt.Errorf("the sidecar passed its memory limit and was killed")
	default:
	}
	if len(normalErrs) > 0 {
		return fmt.Errorf("%d errors seen by normal clients", len(normalErrs))
	}
	return nil
}

func generate(client pluginpb.ConfigManagementPluginServiceClient, app string, tgz []byte) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	stream, err := client.GenerateManifest(ctx)
	if err != nil {
		return 0, err
	}
	if err := cmpserver.SendApp(stream, &pluginpb.ManifestRequestMetadata{AppName: app, AppRelPath: "."}, tgz); err != nil {
		return 0, err
	}
	resp, err := stream.CloseAndRecv()
	if err != nil {
		return 0, err
	}
	return len(resp.GetManifests()), nil
}

// hostileMap is a ConfigMap of small values, size bytes of YAML.
func hostileMap(size int) []byte {
	var b bytes.Buffer
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n")
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "  k%d: \"%d\"\n", i, i)
	}
	return b.Bytes()
}

// hostileList is a manifest holding a list of small integers, size bytes.
func hostileList(size int) []byte {
	var b bytes.Buffer
	b.WriteString("apiVersion: v1\nkind: Thing\nmetadata:\n  name: big\nlist:\n")
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "- %d\n", 1000000+i)
	}
	return b.Bytes()
}

// normalApp is 300 ConfigMaps of 20 values each.
func normalApp(name string) []byte {
	var b bytes.Buffer
	for i := range 300 {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-%d\ndata:\n", name, i)
		for k := range 20 {
			fmt.Fprintf(&b, "  key%d: value %d of %s\n", k, k, name)
		}
	}
	return b.Bytes()
}

// volumeUsed is what the file system of dir has in use, bytes.
func volumeUsed(dir string) (int64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Blocks-st.Bfree) * st.Bsize, true
}

// withScript is tgz (from tarOf) with a run.sh holding script.
func withScript(tgz []byte, script string) []byte {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		panic(err)
	}
	tr := tar.NewReader(zr)
	h, err := tr.Next()
	if err != nil {
		panic(err)
	}
	var out bytes.Buffer
	if _, err := out.ReadFrom(tr); err != nil {
		panic(err)
	}
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	tw.WriteHeader(&tar.Header{Name: h.Name, Mode: 0o644, Size: int64(out.Len()), Typeflag: tar.TypeReg})
	tw.Write(out.Bytes())
	tw.WriteHeader(&tar.Header{Name: "run.sh", Mode: 0o644, Size: int64(len(script)), Typeflag: tar.TypeReg})
	tw.Write([]byte(script))
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

// tarOf is a repository holding out.yaml, as a tar.gz.
func tarOf(out []byte) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	tw.WriteHeader(&tar.Header{Name: "out.yaml", Mode: 0o644, Size: int64(len(out)), Typeflag: tar.TypeReg})
	tw.Write(out)
	tw.Close()
	gz.Close()
	return buf.Bytes()
}
