# strata — build, test, lint, bench. `make test` never rewrites the tree.

GO          ?= go
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
BIN         ?= bin/strata
FUZZTIME    ?= 30s
## The release version: the tag vX.Y.Z on HEAD, else v$(cat VERSION)-dev
## (docs/release.md); commit, its time and dirty as `strata version` shows them.
STAMP       := github.com/strata-dev/strata/internal/stamp
VERSION     ?= $(shell git describe --tags --exact-match --match 'v[0-9]*' 2>/dev/null || echo v$$(cat VERSION)-dev)
COMMIT      := $(shell git rev-parse HEAD 2>/dev/null)
COMMITDATE  := $(shell git log -1 --format=%cI HEAD 2>/dev/null)
DIRTY       := $(shell git status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo true || echo false)
LDFLAGS     := -X $(STAMP).version=$(VERSION) -X $(STAMP).commit=$(COMMIT) -X $(STAMP).date=$(COMMITDATE) -X $(STAMP).dirty=$(DIRTY)

PROTOC_GEN_GO      ?= google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
PROTOC_GEN_GO_GRPC ?= google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
GENBIN             := $(CURDIR)/.cache/genbin

.PHONY: all build image dist releasecache generate test promcheck unit integration lint fmt bench bench-operator bench-operator-cluster bench-operator-watch bench-values bench-cmp bench-generator bench-layers bench-layers-controller bench-helm bench-helm-cli helm-parity load-cmp load-generator load-layers load-operator generate-layers fuzz demo clean testbin cluster argocd-local bench-argocd

all: build

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/strata

## image: strata's OCI image for linux/amd64 and linux/arm64, without a
## Docker daemon, reproducible: bin/image/oci (OCI layout),
## bin/image/strata-oci.tar, bin/image/strata-linux-ARCH.docker.tar
## (docker load), bin/image/digest (docs/release.md).
IMAGEFLAGS ?=
image:
	$(GO) run ./hack/image $(IMAGEFLAGS)

## dist: release archives for linux and darwin × amd64 and arm64 with
## SHA256SUMS and CycloneDX SBOMs in bin/dist, reproducible (docs/release.md).
DISTFLAGS ?=
dist:
	$(GO) run ./hack/dist $(DISTFLAGS)

## test: the full check, as CI runs it: lint, then every test (unit and
## integration, on the real helm and control plane) with the race detector,
## shuffled. Never skipped in CI (testbin builds what the tests run). The
## memory attack tests measure a server's memory, which the race detector
## multiplies: they skip under -race and run in a second pass without it.
test: lint testbin releasecache
	$(GO) test -race -shuffle=on -count=1 ./...
	$(GO) test -count=1 -run '^TestAttack' ./internal/cmpserver ./internal/helmplugin ./internal/generator
	cd hack/promcheck && $(GO) vet ./... && $(GO) test -race -count=1 ./...

## promcheck: the alerts' and dashboards' PromQL, parsed by Prometheus (a
## module of its own under hack/, so Prometheus stays out of go.mod).
promcheck:
	cd hack/promcheck && $(GO) test -count=1 ./...

## Integration packages: their tests run the binaries testbin builds (helm,
## etcd, kube-apiserver). They are the directories named clustertest or
## paritytest, the test-support packages whose own tests start a
## control plane or build helm (kubetest, testbin), hack/cmpbench (its
## smoke test starts Argo CD's sidecar), hack/genload (its smoke test loads
## the generator server for 15 s) and hack/image (it builds strata as
## a release does and runs it from the image's file system). A package matched by
## none is a unit package: with STRATA_UNIT_TESTS=1 a test asking testbin
## for a binary fails, so a misplaced test cannot slip into `make unit`.
INTEGRATION := /(clustertest|paritytest)$$|/internal/kube/kubetest$$|/internal/testbin$$|/hack/cmpbench$$|/hack/genload$$|/hack/layersload$$|/hack/opload$$|/hack/image$$|/browsertest$$

## unit: the unit tests, fast, needing nothing built; go test's cache keeps
## unchanged packages from running again. The contributor's edit-test loop.
unit:
	STRATA_UNIT_TESTS=1 $(GO) test $$($(GO) list ./... | grep -Ev '$(INTEGRATION)')

## integration: only the integration packages.
integration: testbin releasecache
	$(GO) test -race -shuffle=on -count=1 $$($(GO) list ./... | grep -E '$(INTEGRATION)')

## testbin: build the binaries the integration tests run (helm, etcd,
## kube-apiserver) from the Go module proxy into $STRATA_TESTBIN_DIR (default
## ~/.cache/strata/testbin). Cached: only the first run takes minutes.
testbin:
	bash hack/testbin/build.sh all >/dev/null

## releasecache: compile strata as release builds do (static, -trimpath;
## hack/internal/release.Build) into go's build cache, so that hack/image's
## test, which builds strata that way, only links. A cold cache takes
## minutes here, outside any test's time, as testbin does for its binaries.
releasecache:
	CGO_ENABLED=0 GOAMD64=v1 GOARM64=v8.0 GOFLAGS= $(GO) build -trimpath -buildvcs=false -o /dev/null ./cmd/strata

## cluster: run a local control plane (etcd + kube-apiserver) in the
## foreground until Ctrl-C; prints the `export KUBECONFIG=...` to use it.
CLUSTERFLAGS ?=
cluster: testbin
	$(GO) run ./hack/cluster $(CLUSTERFLAGS)

## argocd-local: the Argo CD of internal/argocdtest/clustertest (repo-server,
## application and ApplicationSet controllers of hack/testbin/argocd) with
## strata's sidecars, plugin generator and a git repository, on a local
## control plane, in the foreground until Ctrl-C; prints how to reach it.
argocd-local: testbin
	$(GO) test -c -o $(CURDIR)/.cache/argocd-e2e.test ./internal/argocdtest/clustertest
	cd internal/argocdtest/clustertest && $(CURDIR)/.cache/argocd-e2e.test -argocd-local

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

## generate-layers: regenerate the App/Catalog deepcopy code and CRDs.
CONTROLLER_GEN ?= sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0
generate-layers:
	$(GO) run $(CONTROLLER_GEN) object paths=./internal/layers/v1alpha1/...
	$(GO) run $(CONTROLLER_GEN) crd paths=./internal/layers/v1alpha1/... output:crd:artifacts:config=deploy/crds

## fmt: rewrite sources with gofmt (the only target that edits files).
fmt:
	gofmt -w $$(git ls-files '*.go')

BENCHCOUNT  ?= 5

## bench: every capability's benchmarks, strata beside the peer tool in the
## same run, with the speedup printed (see docs/benchmarks.md).
bench: bench-values bench-cmp bench-layers bench-generator bench-helm

bench-values:
	$(GO) test -run='^$$' -bench='Merge' -benchmem -count=$(BENCHCOUNT) ./internal/values | \
	  awk -v PAIRS='Merge/provenance=false=HelmMergeMaps;Merge/provenance=true=HelmMergeMaps;MergeFiles/provenance=false=HelmMergeFiles;MergeFiles/provenance=true=HelmMergeFiles' -f hack/benchratio.awk

## bench-layers: render an App with 100 extraConfigs of 1,000 keys each,
## explain off and on, beside Helm's parse + MergeMaps chain and a yq reduce.
bench-layers:
	$(GO) test -run='^$$' -bench='Render|HelmMergeChain|YqReduce' -benchmem -count=$(BENCHCOUNT) ./internal/layers | \
	  awk -v PAIRS='Render/explain=false=HelmMergeChain;Render/explain=true=HelmMergeChain;Render/explain=false=YqReduce;Render/explain=true=YqReduce' -f hack/benchratio.awk

## bench-layers-controller: latency from a change to one layer of an App to
## its updated output ConfigMap, through the layers controller on a local
## control plane (kubetest); p50/p99 over 200 changes per run.
bench-layers-controller: testbin
	$(GO) test -run='^$$' -bench='ControllerLatency' -benchtime=200x -count=$(BENCHCOUNT) ./internal/layers/controller/clustertest | \
	  grep -E '^(Benchmark|ok|FAIL)'

## bench-generator: the ApplicationSet plugin generator server with a
## command backend, cache off and on, beside a Python http.server plugin as
## Argo CD's docs write it, at 1, 16 and 64 clients.
bench-generator:
	$(GO) run ./hack/genbench $(GENBENCHFLAGS)

## bench-helm: the built-in Helm plugin in-process beside a `helm template`
## process per render (as Argo CD's repo-server runs it), and its parameters
## announcement beside the proposal's `yq e -o=p | jq` pipeline. Installs the
## Go yq (mikefarah; Debian's yq is another program) into .cache/genbin.
## Runs the whole set BENCHCOUNT times, so each pair is measured side by
## side in every round while the machine's load changes.
YQ ?= github.com/mikefarah/yq/v4@v4.44.3
bench-helm:
	GOBIN=$(GENBIN) $(GO) install $(YQ)
	for i in $$(seq $(BENCHCOUNT)); do \
	  PATH=$(GENBIN):$$PATH $(GO) test -run='^$$' -bench='Render|HelmTemplate|Announce|YqJq' -count=1 ./internal/helmplugin || exit 1; \
	done | \
	  awk -v PAIRS='RenderSubchart=HelmTemplateSubchart;RenderSubchartWorker=HelmTemplateSubchart;Render200=HelmTemplate200;Render200Worker=HelmTemplate200;Render200Cold=HelmTemplate200;Announce5000=YqJqAnnounce5000;Announce5000Cold=YqJqAnnounce5000' -f hack/benchratio.awk

## bench-helm-cli: the local CLI on real charts, one fresh process per run:
## `strata cmp generate DIR --builtin helm` beside `helm template NAME DIR
## --include-crds` (helm v4.3.1 built by hack/testbin), and `strata cmp
## parameters` beside the `yq | jq` pipeline when the Go yq and jq are on
## PATH; BENCHROUNDS rounds, interleaved, medians of wall and CPU time, with
## a document-by-document comparison of the two renders first.
## BASELINE=OLDBIN also times an earlier strata build, interleaved.
##   make bench-helm-cli CHARTS="/tmp/charts/kps /tmp/charts/argo-workflows"
BENCHROUNDS ?= 10
bench-helm-cli: build
	@test -n "$(CHARTS)" || { echo 'usage: make bench-helm-cli CHARTS="dir1 dir2"'; exit 2; }
	$(GO) run ./hack/helmbench -n $(BENCHROUNDS) -strata $(BIN) $(if $(BASELINE),-baseline $(BASELINE)) -helm "$$(bash hack/testbin/build.sh helm)" -compare $(CHARTS)

## helm-parity: the built-in Helm plugin beside the helm v4.3.1 CLI on real
## charts, with their defaults, their ci/*.yaml values files, their
## helm-unittest tests' values and the pattern ci/*.yaml, compared as Argo CD
## reads them (hack/helmparity/sweep.sh; docs/helm.md#parity). The charts
## given are each other's dependencies; nothing is fetched.
##   make helm-parity CHARTS="$(ls -d /tmp/charts/*/charts/*)"
helm-parity: build
	@test -n "$(CHARTS)" || { echo 'usage: make helm-parity CHARTS="dir1 dir2"'; exit 2; }
	bash hack/helmparity/sweep.sh -strata $(BIN) $(CHARTS)

## bench-cmp: Argo CD's plugin sidecar (argocd-cmp-server, built from the
## module proxy), `strata cmp serve`, a drain-and-hash floor and that floor
## starting the plugin's command once per request, driven as
## the repo-server drives them, work directories on disk, in one run; then
## the built-in Helm plugin beside `helm template` and a yq | jq pipeline
## (the Go yq is installed into .cache/genbin as for bench-helm; jq comes
## from the system: apt-get install jq). Takes several minutes;
## CMPBENCHFLAGS=-quick for a smoke run, -tmpfs adds a tmpfs column.
CMPBENCHFLAGS ?=
bench-cmp: build
	GOBIN=$(GENBIN) $(GO) install $(YQ)
	PATH=$(GENBIN):$$PATH $(GO) run ./hack/cmpbench -strata $(abspath $(BIN)) $(CMPBENCHFLAGS)

## bench-argocd: GenerateManifest through the real repo-server of
## internal/argocdtest/clustertest, strata's sidecar beside Argo CD's
## argocd-cmp-server and strata's Helm plugin beside Argo CD's native Helm
## source, interleaved; prints each median and the ratio (peer/strata).
ARGOBENCHTIME ?= 30x
bench-argocd: testbin
	$(GO) test -run '^$$' -bench BenchmarkGenerateManifest -benchtime $(ARGOBENCHTIME) ./internal/argocdtest/clustertest

## load-cmp: the plugin sidecar under deploy/cmp's memory limit (1Gi, a
## watchdog on its RssAnon), normal and hostile clients together for
## LOADDURATION; prints the normal clients' errors (goal 0) and the peak
## memory (hack/cmpload; docs/benchmarks.md).
LOADDURATION ?= 3m
load-cmp: build
	$(GO) run ./hack/cmpload -strata $(abspath $(BIN)) -duration $(LOADDURATION)

## load-generator: the ApplicationSet plugin generator server under
## deploy/generator's memory limit (256Mi, a watchdog on its RssAnon),
## normal and hostile clients together for LOADDURATION (hack/genload;
## docs/benchmarks.md).
load-generator: build
	$(GO) run ./hack/genload -strata $(abspath $(BIN)) -duration $(LOADDURATION)

## load-layers: the layers controller under deploy/layers-controller's
## memory limit (512Mi, a watchdog on its RssAnon) on a real control
## plane, normal and hostile tenants together for LOADDURATION
## (hack/layersload; docs/benchmarks.md).
load-layers: build
	$(GO) run ./hack/layersload -strata $(abspath $(BIN)) -duration $(LOADDURATION)

## load-operator: the addon operator under deploy/operator's memory limit
## (512Mi, a watchdog on its RssAnon) on a real control plane, normal
## modules beside hostile hooks for LOADDURATION (hack/opload;
## docs/benchmarks.md).
load-operator: build
	$(GO) run ./hack/opload -strata $(abspath $(BIN)) -duration $(LOADDURATION)

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

## bench-operator: `strata operator run` with local backends on 50 modules
## × 3 shell hooks + a global hook: cold start and no-op restart to the
## first converge, peak RSS (see docs/benchmarks.md).
bench-operator:
	$(GO) run ./hack/opbench $(OPBENCHFLAGS)

## bench-operator-cluster: flant's addon-operator (built from the Go module
## proxy by hack/testbin/build.sh) and `strata operator run` side by side on
## a kubetest control plane, same tree: cold start and no-op restart to the
## first converge, peak RSS, CPU (see docs/benchmarks.md).
bench-operator-cluster:
	$(GO) run ./hack/opbench -cluster -dir .cache/opbench-cluster $(OPBENCHFLAGS)

## bench-operator-watch: issue 26's P10, both operators on a kubetest control
## plane watching 10,000 ConfigMaps through 20 global hooks with jqFilters:
## event-to-hook latency p50/p99, RssAnon and peak RSS (see docs/benchmarks.md).
bench-operator-watch:
	$(GO) run ./hack/opbench -watch -dir .cache/opbench-watch $(OPBENCHFLAGS)
