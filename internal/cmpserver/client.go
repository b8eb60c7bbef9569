package cmpserver

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"

	"github.com/strata-dev/strata/internal/cmpserver/pluginpb"
)

// ChunkSize is the size of the file chunks the repo-server streams.
const ChunkSize = 1024

// An AppSender is the sending side of any of the three streaming RPCs
// (GenerateManifest, MatchRepository, GetParametersAnnouncement).
type AppSender interface {
	Send(*pluginpb.AppStreamRequest) error
}

// SendApp streams an application to a plugin server the way Argo CD's
// repo-server does: md, with Checksum and Size set from tgz, then tgz in
// ChunkSize chunks. The caller closes the stream and reads the answer.
//
// A server may end the stream early (a rejected request); Send then
// returns io.EOF and SendApp returns nil: the server's status comes from
// CloseAndRecv, as in grpc-go.
func SendApp(s AppSender, md *pluginpb.ManifestRequestMetadata, tgz []byte) error {
	sum := sha256.Sum256(tgz)
	md.Checksum, md.Size = hex.EncodeToString(sum[:]), int64(len(tgz))
	if err := s.Send(&pluginpb.AppStreamRequest{Request: &pluginpb.AppStreamRequest_Metadata{Metadata: md}}); err != nil {
		return eofIsNil(err)
	}
	for off := 0; off < len(tgz); off += ChunkSize {
		chunk := tgz[off:min(off+ChunkSize, len(tgz))]
		if err := s.Send(&pluginpb.AppStreamRequest{Request: &pluginpb.AppStreamRequest_File{File: &pluginpb.File{Chunk: chunk}}}); err != nil {
			return eofIsNil(err)
		}
	}
	return nil
}

func eofIsNil(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}
