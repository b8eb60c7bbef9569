package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// appDir is the application's directory in both repositories; appFiles is
// how many files it holds (m.yaml and its templates).
const (
	appDir   = "apps/web"
	appFiles = 10
)

// manifests is the application's m.yaml, which the plugin prints: three
// ConfigMaps.
const manifests = `apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data:
  replicas: "3"
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-env
data:
  ENV: prod
  LOG_LEVEL: info
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-flags
data:
  feature.x: "on"
`

// manifestCount is the number of manifests in m.yaml.
const manifestCount = 3

// A repo is a generated repository, packed once.
type repo struct {
	files   int
	content int64  // bytes of file content
	tgz     []byte // the tar.gz the repo-server would stream
}

// genRepo generates a repository of files files, appFiles of which form the
// application in appDir; the others sit 100 to a directory under
// apps/app-NNN/templates. Every file but m.yaml is 2.6–8 KB (5.3 KB on
// average) of pseudo-random base64 text in 76-column lines, which gzip
// shrinks by only a quarter, so the tar.gz of 20,000 files is about 80 MB.
// The same arguments give the same bytes.
func genRepo(files int) (*repo, error) {
	const avg = 5300
	const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	rng := rand.New(rand.NewPCG(uint64(files), 1))
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	r := &repo{files: files}
	mtime := time.Unix(1_700_000_000, 0)
	add := func(name string, body []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body)), ModTime: mtime}); err != nil {
			return err
		}
		r.content += int64(len(body))
		_, err := tw.Write(body)
		return err
	}
	dir := func(name string) error {
		return tw.WriteHeader(&tar.Header{Name: name + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: mtime})
	}
	body := make([]byte, 2*avg)
	text := func() []byte {
		n := avg/2 + rng.IntN(avg)
		for i := range n {
			if i%77 == 76 {
				body[i] = '\n'
			} else {
				body[i] = letters[rng.Uint32()&63]
			}
		}
		return body[:n]
	}

	for _, d := range []string{"apps", appDir, appDir + "/templates"} {
		if err := dir(d); err != nil {
			return nil, err
		}
	}
	if err := add(appDir+"/m.yaml", []byte(manifests)); err != nil {
		return nil, err
	}
	for i := range appFiles - 1 {
		if err := add(fmt.Sprintf("%s/templates/t-%d.yaml", appDir, i), text()); err != nil {
			return nil, err
		}
	}
	for i := range files - appFiles {
		if i%100 == 0 {
			d := fmt.Sprintf("apps/app-%03d", i/100)
			if err := dir(d); err != nil {
				return nil, err
			}
			if err := dir(d + "/templates"); err != nil {
				return nil, err
			}
		}
		if err := add(fmt.Sprintf("apps/app-%03d/templates/file-%02d.yaml", i/100, i%100), text()); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	r.tgz = buf.Bytes()
	return r, nil
}

// chunkSize is the size of the chunks the repo-server streams.
const chunkSize = 1024

// A payload is one repository stream as a request carries it: the first
// chunk, which may differ from the tarball's, the rest of the tarball,
// and the checksum of the whole.
type payload struct {
	head     []byte
	rest     []byte
	checksum string
}

func (p payload) size() int64 { return int64(len(p.head) + len(p.rest)) }

// variant returns tgz with id as the MTIME of its gzip header (bytes 4–7):
// the same repository under another checksum. Id 0 is tgz itself.
func variant(tgz []byte, id uint32) payload {
	head := slices.Clone(tgz[:min(chunkSize, len(tgz))])
	binary.LittleEndian.PutUint32(head[4:8], id)
	h := sha256.New()
	h.Write(head)
	h.Write(tgz[len(head):])
	return payload{head: head, rest: tgz[len(head):], checksum: hex.EncodeToString(h.Sum(nil))}
}
