package tarball_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/strata-dev/strata/internal/cmpserver/tarball"
)

// BenchmarkReceive compares, per repository size:
//
//   - cold: Receive into an empty cache (hash, decompress, extract into the
//     cache, copy into the workspace);
//   - warm: Receive of a tarball already cached (hash, copy);
//   - extract: Extract alone into a fresh directory, what Argo CD's own
//     sidecar does for every request.
//
// The stream is served from memory in 1 KiB chunks, as the gRPC layer
// delivers Argo CD's; Close of the workspace is not timed.
func BenchmarkReceive(b *testing.B) {
	repos := []struct {
		name  string
		files int
		size  int // average file size
	}{
		{"10files", 10, 4 << 10},
		{"20000files", 20_000, 5300},
	}
	for _, repo := range repos {
		b.Run(repo.name, func(b *testing.B) {
			data := genRepo(b, repo.files, repo.size)
			checksum := sum(data)
			b.Logf("%d files, %d bytes compressed", repo.files, len(data))
			receive := func(b *testing.B, s *tarball.Store) *tarball.Workspace {
				ws, err := s.Receive(context.Background(), chunks(data), int64(len(data)), checksum, tarball.Options{})
				if err != nil {
					b.Fatalf("Receive() = %v", err)
				}
				return ws
			}

			b.Run("cold", func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					root := filepath.Join(b.TempDir(), fmt.Sprint(i))
					s, err := tarball.NewStore(root, 1<<40)
					if err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					ws := receive(b, s)
					b.StopTimer()
					ws.Close()
					os.RemoveAll(root)
					b.StartTimer()
				}
			})
			b.Run("warm", func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				s, err := tarball.NewStore(filepath.Join(b.TempDir(), "store"), 1<<40)
				if err != nil {
					b.Fatal(err)
				}
				receive(b, s).Close()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					ws := receive(b, s)
					b.StopTimer()
					ws.Close()
					b.StartTimer()
				}
				b.StopTimer()
				if st := s.Stats(); st.Extractions != 1 {
					b.Fatalf("warm Receives extracted: %+v", st)
				}
			})
			b.Run("extract", func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				base := b.TempDir()
				for i := 0; i < b.N; i++ {
					dir := filepath.Join(base, fmt.Sprint(i))
					if err := tarball.Extract(context.Background(), chunks(data), dir, tarball.Options{}); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					os.RemoveAll(dir)
					b.StartTimer()
				}
			})
		})
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
