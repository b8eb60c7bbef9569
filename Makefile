# strata — build, test, lint, bench. `make test` never rewrites the tree.

GO          ?= go
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
BIN         ?= bin/strata
FUZZTIME    ?= 30s
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
LDFLAGS     := -X github.com/strata-dev/strata/internal/cli.version=$(VERSION)

PROTOC_GEN_GO      ?= google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
PROTOC_GEN_GO_GRPC ?= google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
GENBIN             := $(CURDIR)/.cache/genbin

.PHONY: all build generate test unit lint fmt bench bench-values bench-cmp fuzz demo clean

all: build

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/strata

## test: lint, then every test with the race detector, shuffled.
test: lint unit

unit:
	$(GO) test -race -shuffle=on -count=1 ./...

lint:
	@bad="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './testdata/*'))"; \
	if [ -n "$$bad" ]; then echo "gofmt needed on:"; echo "$$bad"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

## generate: regenerate the gRPC stubs (needs protoc: apt-get install protobuf-compiler).
generate:
	GOBIN=$(GENBIN) $(GO) install $(PROTOC_GEN_GO)
	GOBIN=$(GENBIN) $(GO) install $(PROTOC_GEN_GO_GRPC)
	PATH=$(GENBIN):$$PATH protoc -I internal -I /usr/include \
	  --go_out=internal --go_opt=paths=source_relative \
	  --go-grpc_out=internal --go-grpc_opt=paths=source_relative \
	  internal/cmpserver/pluginpb/repository.proto internal/cmpserver/pluginpb/plugin.proto

## fmt: rewrite sources with gofmt (the only target that edits files).
fmt:
	gofmt -w $$(git ls-files '*.go')

BENCHCOUNT  ?= 5

## bench: every capability's benchmarks, strata beside the peer tool in the
## same run, with the speedup printed (see docs/benchmarks.md).
bench: bench-values bench-cmp

bench-values:
	$(GO) test -run='^$$' -bench='Merge' -benchmem -count=$(BENCHCOUNT) ./internal/values | \
	  awk -v PAIRS='Merge/provenance=false=HelmMergeMaps;Merge/provenance=true=HelmMergeMaps;MergeFiles/provenance=false=HelmMergeFiles;MergeFiles/provenance=true=HelmMergeFiles' -f hack/benchratio.awk

## bench-cmp: the plugin server's GenerateManifest, driven like Argo CD's
## repo-server, with its cache off (Argo CD's way: extract every request)
## and on. Takes several minutes; CMPBENCHFLAGS=-quick for a smoke run.
CMPBENCHFLAGS ?=
bench-cmp:
	$(GO) run ./internal/cmpserver/cmpbench $(CMPBENCHFLAGS)

## fuzz: run every fuzz target for FUZZTIME each.
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list='^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

## demo: the quickstart's first command.
demo:
	$(GO) run ./cmd/strata values merge examples/values/base.yaml examples/values/prod.yaml \
	  --set image.tag=1.5.0 --explain

clean:
	rm -rf bin
