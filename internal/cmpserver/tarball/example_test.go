package tarball_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/strata-dev/strata/internal/cmpserver/tarball"
)

func ExampleStore_Receive() {
	// What the repo-server sends: a gzip-compressed tar, its size and the
	// hex SHA-256 of the compressed bytes.
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	body := "replicas: 1\n"
	tw.WriteHeader(&tar.Header{Name: "app/values.yaml", Mode: 0o644, Size: int64(len(body))})
	tw.Write([]byte(body))
	tw.Close()
	zw.Close()
	stream := buf.Bytes()
	sum := sha256.Sum256(stream)

	root, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	store, err := tarball.NewStore(filepath.Join(root, "repos"), 1<<30)
	if err != nil {
		log.Fatal(err)
	}
	for range 2 {
		ws, err := store.Receive(context.Background(), bytes.NewReader(stream), int64(len(stream)), hex.EncodeToString(sum[:]), tarball.Options{})
		if err != nil {
			log.Fatal(err)
		}
		b, _ := os.ReadFile(filepath.Join(ws.Dir(), "app/values.yaml"))
		fmt.Printf("%s", b)
		ws.Close() // run the plugin's commands in ws.Dir() first
	}
	st := store.Stats()
	fmt.Printf("hits %d, misses %d, extractions %d\n", st.Hits, st.Misses, st.Extractions)
	// Output:
	// replicas: 1
	// replicas: 1
	// hits 1, misses 1, extractions 1
}
