package tarball_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/cmpserver/tarball"
)

// benchDir returns a directory for a benchmark's trees: under
// $STRATA_BENCH_DIR, by default /var/tmp, which is on disk where /tmp may be
// a tmpfs. The figures that matter are on disk (see the package
// documentation); STRATA_BENCH_DIR=/dev/shm gives the tmpfs column.
func benchDir(b *testing.B) string {
	b.Helper()
	base := os.Getenv("STRATA_BENCH_DIR")
	if base == "" {
		base = "/var/tmp"
	}
	dir, err := os.MkdirTemp(base, "strata-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// benchRepos are the repository sizes of issue 11: a small application, a
// Helm-style repository of about 220 small files, and a monorepo.
var benchRepos = []struct {
	name  string
	files int
	size  int // average file size
}{
	{"10files", 10, 4 << 10},
	{"220files", 220, 2 << 10},
	{"20000files", 20_000, 5300},
}

// BenchmarkReceive compares, per repository size, on disk (benchDir):
//
//   - cold: Receive into an empty cache (hash, decompress, extract into the
//     cache, copy into the workspace);
//   - warm: Receive of a tarball already cached (hash, copy), what a
//     command plugin's repeated request costs;
//   - readonly: the same with Options.ReadOnly (hash, no copy), what a
//     built-in plugin's costs;
//   - recycled: the warm Receive with recycling (hash, no copy), the check
//     of the workspace at Close in close-ns/op;
//   - extract: Extract alone into a fresh directory, what Argo CD's own
//     sidecar does for every request.
//
// The stream is served from memory in 1 KiB chunks, as the gRPC layer
// delivers Argo CD's. Removing the workspace is not in ns/op: it is
// reported apart, as close-ns/op (the server removes workspaces after
// answering).
func BenchmarkReceive(b *testing.B) {
	for _, repo := range benchRepos {
		b.Run(repo.name, func(b *testing.B) {
			data := genRepo(b, repo.files, repo.size)
			checksum := sum(data)
			b.Logf("%d files, %d bytes compressed", repo.files, len(data))
			receive := func(b *testing.B, s *tarball.Store, opts tarball.Options) *tarball.Workspace {
				ws, err := s.Receive(context.Background(), chunks(data), int64(len(data)), checksum, opts)
				if err != nil {
					b.Fatalf("Receive() = %v", err)
				}
				return ws
			}
			closeWS := func(b *testing.B, ws *tarball.Workspace, closing *time.Duration) {
				b.StopTimer()
				start := time.Now()
				ws.Settle(nil)
				if err := ws.Close(); err != nil {
					b.Fatal(err)
				}
				*closing += time.Since(start)
				b.StartTimer()
			}

			b.Run("cold", func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				base := benchDir(b)
				var closing time.Duration
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					root := filepath.Join(base, fmt.Sprint(i))
					s, err := tarball.NewStore(root, 1<<40)
					if err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					ws := receive(b, s, tarball.Options{})
					closeWS(b, ws, &closing)
					b.StopTimer()
					os.RemoveAll(root)
					b.StartTimer()
				}
				b.ReportMetric(float64(closing.Nanoseconds())/float64(b.N), "close-ns/op")
			})
			for _, mode := range []struct {
				name string
				opts tarball.Options
			}{
				{"warm", tarball.Options{}},
				{"readonly", tarball.Options{ReadOnly: true}},
			} {
				b.Run(mode.name, func(b *testing.B) {
					b.SetBytes(int64(len(data)))
					s, err := tarball.NewStore(filepath.Join(benchDir(b), "store"), 1<<40)
					if err != nil {
						b.Fatal(err)
					}
					receive(b, s, mode.opts).Close()
					var closing time.Duration
					b.ResetTimer()
					cpu := cpuTime()
					for i := 0; i < b.N; i++ {
						closeWS(b, receive(b, s, mode.opts), &closing)
					}
					b.StopTimer()
					reportCPU(b, cpu)
					b.ReportMetric(float64(closing.Nanoseconds())/float64(b.N), "close-ns/op")
					if st := s.Stats(); st.Extractions != 1 {
						b.Fatalf("warm Receives extracted: %+v", st)
					}
				})
			}
			b.Run("recycled", func(b *testing.B) {
				// A command plugin's repeated request with recycling:
				// hash, take the kept workspace; the check at Close is
				// close-ns/op. Past the change-time margin (shortened
				// here), untouched files cost a stat.
				defer tarball.SetRecycleMargin(50 * time.Millisecond)()
				b.SetBytes(int64(len(data)))
				s, err := tarball.NewStore(filepath.Join(benchDir(b), "store"), 1<<40)
				if err != nil {
					b.Fatal(err)
				}
				if err := s.SetRecycling(tarball.Recycling{}); err != nil {
					b.Skip(err)
				}
				ws := receive(b, s, tarball.Options{})
				ws.Settle(nil)
				ws.Close()
				time.Sleep(100 * time.Millisecond)
				var closing time.Duration
				b.ResetTimer()
				cpu := cpuTime()
				for i := 0; i < b.N; i++ {
					closeWS(b, receive(b, s, tarball.Options{}), &closing)
				}
				b.StopTimer()
				reportCPU(b, cpu)
				b.ReportMetric(float64(closing.Nanoseconds())/float64(b.N), "close-ns/op")
				if st := s.Stats(); st.Reused != uint64(b.N) {
					b.Fatalf("recycled Receives made copies: %+v", st)
				}
			})
			b.Run("extract", func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				base := benchDir(b)
				var closing time.Duration
				cpu := cpuTime()
				defer reportCPU(b, cpu)
				for i := 0; i < b.N; i++ {
					dir := filepath.Join(base, fmt.Sprint(i))
					if err := tarball.Extract(context.Background(), chunks(data), dir, tarball.Options{}); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					start := time.Now()
					os.RemoveAll(dir)
					closing += time.Since(start)
					b.StartTimer()
				}
				b.ReportMetric(float64(closing.Nanoseconds())/float64(b.N), "close-ns/op")
			})
			b.Run("floor", func(b *testing.B) {
				// Drain and hash the stream: what no server can beat.
				b.SetBytes(int64(len(data)))
				for i := 0; i < b.N; i++ {
					h := sha256.New()
					if _, err := io.Copy(h, chunks(data)); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per op since start, as cpu-ns/op, which
// unlike ns/op does not count waiting on a busy disk (it does count the
// removals, which close-ns/op times). Other goroutines' CPU counts too.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// BenchmarkReceiveConcurrent runs 16 warm Receives of the monorepo at
// once, as 16 clients of the sidecar do, and reports the memory they take:
// bytes allocated per Receive (B/op), and the process's peak resident set
// (peak-rss-MiB; the peak since the process started, so run it alone:
// -bench ReceiveConcurrent). The tarball is 78 MiB-like and served from
// memory once, shared by the 16 streams; the Store itself must not hold a
// stream or a tree's contents in memory.
func BenchmarkReceiveConcurrent(b *testing.B) {
	const clients = 16
	repo := benchRepos[2]
	data := genRepo(b, repo.files, repo.size)
	checksum := sum(data)
	s, err := tarball.NewStore(filepath.Join(benchDir(b), "store"), 1<<40)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var wg sync.WaitGroup
		errs := make(chan error, clients)
		for range clients {
			wg.Go(func() {
				ws, err := s.Receive(context.Background(), chunks(data), int64(len(data)), checksum, tarball.Options{})
				if err != nil {
					errs <- err
					return
				}
				errs <- ws.Close()
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		b.ReportMetric(float64(ru.Maxrss)/1024, "peak-rss-MiB")
	}
	if st := s.Stats(); st.Extractions != 1 {
		b.Fatalf("concurrent Receives of one tarball extracted it %d times", st.Extractions)
	}
}

// genRepo writes a gzip-compressed tar of a repository of n files of
// about size bytes each, 100 to a directory, into b.TempDir() and returns
// its bytes. The content is random text (64 letters), which gzip shrinks
// by only a quarter.
func genRepo(b *testing.B, n, size int) []byte {
	b.Helper()
	name := filepath.Join(b.TempDir(), "repo.tar.gz")
	f, err := os.Create(name)
	if err != nil {
		b.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	rng := rand.New(rand.NewPCG(1, 2))
	const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	body := make([]byte, 2*size)
	for i := range n {
		if i%100 == 0 {
			d := fmt.Sprintf("apps/app-%03d/templates/", i/100)
			if err := tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
				b.Fatal(err)
			}
		}
		m := size/2 + rng.IntN(size)
		for j := range m {
			if j%77 == 76 {
				body[j] = '\n'
			} else {
				body[j] = letters[rng.IntN(len(letters))]
			}
		}
		h := &tar.Header{
			Name:     fmt.Sprintf("apps/app-%03d/templates/file-%03d.yaml", i/100, i%100),
			Typeflag: tar.TypeReg,
			Mode:     0o644,
			Size:     int64(m),
		}
		if err := tw.WriteHeader(h); err != nil {
			b.Fatal(err)
		}
		if _, err := tw.Write(body[:m]); err != nil {
			b.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		b.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(name)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkUsage measures a walk of a 20,000-file workspace: what the disk
// budget of cmp serve costs a long request of such a repository each time
// it measures what the commands wrote.
func BenchmarkUsage(b *testing.B) {
	var ents []ent
	for d := range 200 {
		ents = append(ents, dir(fmt.Sprintf("d%d", d)))
		for f := range 100 {
			ents = append(ents, reg(fmt.Sprintf("d%d/f%d.yaml", d, f), "kind: ConfigMap\nmetadata: {name: x}\n"))
		}
	}
	data := tgz(b, ents...)
	s, err := tarball.NewStore(b.TempDir(), 1<<30)
	if err != nil {
		b.Fatal(err)
	}
	ws, err := s.Receive(b.Context(), chunks(data), int64(len(data)), sum(data), tarball.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	for b.Loop() {
		if _, err := ws.Usage(); err != nil {
			b.Fatal(err)
		}
	}
}
