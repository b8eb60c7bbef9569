// Package pluginpb holds the protocol buffers of Argo CD's config management
// plugin service (proto packages plugin and repository) and their generated
// Go code. Regenerate with `make generate` (protoc from Debian's
// protobuf-compiler, protoc-gen-go and protoc-gen-go-grpc at the versions the
// Makefile pins).
package pluginpb
