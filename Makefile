# driftscan. `make demo` and `make test` do all the set-up on a fresh machine.
SHELL := /bin/bash
GO    ?= go

K8S_VERSION  := v1.37.2
K8S_MINOR    := 37
CACHE        := $(CURDIR)/.cache
TESTBIN      := $(CACHE)/testbin
BIN          := $(CURDIR)/bin
VERSION      ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT       ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo none)
LDFLAGS      := -X main.version=$(VERSION) -X main.commit=$(COMMIT)
CP_LDFLAGS   := -X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) \
                -X k8s.io/component-base/version.gitMajor=1 \
                -X k8s.io/component-base/version.gitMinor=$(K8S_MINOR)

# Every test run uses the control plane built here; envtest reads this.
export KUBEBUILDER_ASSETS := $(TESTBIN)

.PHONY: all build test testbin browser lint demo bench fuzz image clean

all: build

## build: the driftscan binary in bin/
build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/driftscan ./cmd/driftscan

# The real reconcilers the tests run (fixtures/reconcilers): Argo CD v3.5.7's
# application controller and repo server in one binary, the helm and
# kustomize its repo server runs, Flux's controllers, and their CRDs.
ARGOCD_BINS := $(TESTBIN)/argocd $(TESTBIN)/helm $(TESTBIN)/kustomize
FLUX_BINS   := $(TESTBIN)/source-controller $(TESTBIN)/kustomize-controller $(TESTBIN)/helm-controller
SOPS_BINS   := $(TESTBIN)/sops $(TESTBIN)/age-keygen
CRD_STAMPS  := $(TESTBIN)/crds/argocd/.stamp $(TESTBIN)/crds/flux/.stamp

## testbin: kube-apiserver, etcd, kube-controller-manager, Argo CD, Flux, sops, an OCI registry and Stakater Reloader built from Go modules (once; cached in .cache/testbin)
testbin: $(TESTBIN)/kube-apiserver $(TESTBIN)/etcd $(TESTBIN)/kube-controller-manager $(TESTBIN)/argodiff $(ARGOCD_BINS) $(FLUX_BINS) $(SOPS_BINS) $(TESTBIN)/registry $(TESTBIN)/reloader $(CRD_STAMPS)
	@echo "control plane binaries: $(TESTBIN)"

$(TESTBIN)/kube-apiserver $(TESTBIN)/etcd:
	@mkdir -p $(TESTBIN)
	@echo "building kube-apiserver $(K8S_VERSION) and etcd from Go modules (about 8 minutes the first time on 2 cores)..."
	cd fixtures/controlplane && $(GO) build -trimpath -ldflags '$(CP_LDFLAGS)' -o $(TESTBIN)/ ./kube-apiserver ./etcd

# kube-controller-manager runs the built-in controllers for the test packages
# that ask for them (cluster.Options.ControllerManager); a few minutes once
# kube-apiserver's packages are in the build cache.
$(TESTBIN)/kube-controller-manager: fixtures/controlplane/kube-controller-manager/main.go fixtures/controlplane/go.mod
	@mkdir -p $(TESTBIN)
	cd fixtures/controlplane && $(GO) build -trimpath -ldflags '$(CP_LDFLAGS)' -o $(TESTBIN)/ ./kube-controller-manager

# argodiff runs Argo CD's own diff (gitops-engine pkg/diff), as a reference
# the tests and the benchmark compare driftscan with.
$(TESTBIN)/argodiff: fixtures/controlplane/argodiff/main.go fixtures/controlplane/go.mod
	@mkdir -p $(TESTBIN)
	cd fixtures/controlplane && $(GO) build -trimpath -o $(TESTBIN)/ ./argodiff

# Each reconciler is built from a module of its own (never from driftscan's
# go.mod: they carry replace directives), rebuilt only when that module changes.
$(TESTBIN)/argocd: fixtures/argocd/main.go fixtures/argocd/go.mod fixtures/argocd/go.sum
	@mkdir -p $(TESTBIN)
	@echo "building Argo CD v3.5.7 from Go modules (about 7 minutes the first time on 2 cores)..."
	cd fixtures/argocd && $(GO) build -trimpath -ldflags '-X github.com/argoproj/argo-cd/v3/common.version=3.5.7' -o $(TESTBIN)/ .

$(TESTBIN)/helm $(TESTBIN)/kustomize &: fixtures/argocd/tools/go.mod fixtures/argocd/tools/go.sum
	@mkdir -p $(TESTBIN)
	cd fixtures/argocd/tools && $(GO) build -trimpath -ldflags '-X helm.sh/helm/v4/internal/version.version=v4.2.1' \
	  -o $(TESTBIN)/ helm.sh/helm/v4/cmd/helm sigs.k8s.io/kustomize/kustomize/v5

$(FLUX_BINS) &: fixtures/flux/go.mod fixtures/flux/go.sum
	@mkdir -p $(TESTBIN)
	@echo "building Flux source-, kustomize- and helm-controller from Go modules..."
	cd fixtures/flux && $(GO) build -trimpath -o $(TESTBIN)/ github.com/fluxcd/source-controller github.com/fluxcd/kustomize-controller github.com/fluxcd/helm-controller

# sops and age-keygen encrypt the tests' SOPS manifests (fixtures/sops) as a
# team does before it commits them: the sops release kustomize-controller
# decrypts with, from the Flux module's graph.
$(SOPS_BINS) &: fixtures/flux/go.mod fixtures/flux/go.sum
	@mkdir -p $(TESTBIN)
	cd fixtures/flux && $(GO) build -trimpath -o $(TESTBIN)/ github.com/getsops/sops/v3/cmd/sops filippo.io/age/cmd/age-keygen

# Stakater Reloader v1.4.22, which rolls a workload when its ConfigMap or
# Secret changes (scanner/cleansync runs it). Built from a copy of its
# module source (fixtures/reloader pins the version), with two changes:
# openshift/api at a commit the module proxy serves (fixtures/reloader/go.mod
# says why), and its metrics and liveness server on a free loopback port in
# place of :9090 on every interface, which tests may not bind (it is a
# constant, so no flag or -X can move it). What it does to workloads is
# upstream's.
RELOADER_SRC := $(CACHE)/reloader-src
$(TESTBIN)/reloader: fixtures/reloader/go.mod fixtures/reloader/go.sum
	@mkdir -p $(TESTBIN)
	@echo "building Stakater Reloader from Go modules (about 5 minutes the first time on 2 cores)..."
	rm -rf $(RELOADER_SRC)
	dir=$$(cd fixtures/reloader && $(GO) mod download -json github.com/stakater/Reloader | sed -n 's/.*"Dir": "\(.*\)",/\1/p') && \
	  cp -r $$dir $(RELOADER_SRC) && chmod -R u+w $(RELOADER_SRC)
	sed -i 's|DefaultHttpListenAddr = ":9090"|DefaultHttpListenAddr = "127.0.0.1:0"|' $(RELOADER_SRC)/internal/pkg/constants/constants.go
	grep -q 'DefaultHttpListenAddr = "127.0.0.1:0"' $(RELOADER_SRC)/internal/pkg/constants/constants.go
	cd $(RELOADER_SRC) && $(GO) mod edit -replace github.com/openshift/api=github.com/openshift/api@v0.0.0-20250710004639-926605d3338b && \
	  GOFLAGS=-mod=mod $(GO) build -trimpath -o $(TESTBIN)/reloader .
	rm -rf $(RELOADER_SRC)

# An OCI registry for charts pushed with the real helm: distribution v3.1.1,
# the registry Flux's source-controller tests its OCI sources against, built
# from the Flux module's graph (its go.sum pins it).
$(TESTBIN)/registry: fixtures/flux/go.mod fixtures/flux/go.sum
	@mkdir -p $(TESTBIN)
	cd fixtures/flux && $(GO) build -trimpath -o $(TESTBIN)/ github.com/distribution/distribution/v3/cmd/registry

# The CRDs of exactly the versions built, copied out of the module cache; for
# Argo CD also the script its repo server runs on every commit it renders
# (hack/git-verify-wrapper.sh, which upstream's image puts on PATH).
$(TESTBIN)/crds/argocd/.stamp: fixtures/argocd/go.mod
	@rm -rf $(@D) && mkdir -p $(@D)
	dir=$$(cd fixtures/argocd && $(GO) mod download -json github.com/argoproj/argo-cd/v3 | sed -n 's/.*"Dir": "\(.*\)",/\1/p') && \
	  install -m 0644 $$dir/manifests/crds/application-crd.yaml $$dir/manifests/crds/appproject-crd.yaml $$dir/manifests/crds/applicationset-crd.yaml $(@D)/ && \
	  install -m 0755 $$dir/hack/git-verify-wrapper.sh $(TESTBIN)/
	@touch $@

$(TESTBIN)/crds/flux/.stamp: fixtures/flux/go.mod
	@rm -rf $(@D) && mkdir -p $(@D)
	cd fixtures/flux && for m in source-controller kustomize-controller helm-controller; do \
	  dir=$$($(GO) mod download -json github.com/fluxcd/$$m | sed -n 's/.*"Dir": "\(.*\)",/\1/p') && \
	  install -m 0644 $$dir/config/crd/bases/*.yaml $(@D)/ || exit 1; \
	done
	@touch $@

## browser: Debian's Chromium for the HTML report's browser test (installed only when missing)
CHROMIUM := /usr/bin/chromium
browser:
	@if [ ! -x $(CHROMIUM) ]; then \
	  echo "installing Debian's chromium for the HTML report's browser test..."; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >/tmp/driftscan-chromium.log 2>&1 \
	    || { cat /tmp/driftscan-chromium.log; exit 1; }; \
	fi

# staticcheck, built from the module proxy into the cache, pinned: 2026.2.2
# (v0.8.2) is the newest release and builds with Go 1.26.
STATICCHECK_VERSION := v0.8.2
STATICCHECK         := $(CACHE)/tools/staticcheck-$(STATICCHECK_VERSION)/staticcheck

$(STATICCHECK):
	GOBIN=$(dir $@) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

## lint: go vet, gofmt and staticcheck
lint: $(STATICCHECK)
	$(GO) vet ./...
	$(STATICCHECK) ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.cache/*')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## test: everything, against the real control plane and in a real browser (fails, never
## skips, if either cannot start), then each fuzz target for a few seconds. Test artifacts
## (the browser test's screenshot) land in .cache/test-artifacts.
# -timeout 30m: e2e's TestMain starts kube-apiserver, kube-controller-manager, Argo CD and
# Flux before its tests (8.5 minutes once on a 2-core machine, beside the other packages' tests), and go test's
# default of 10m (killed at 11m, counted from the process start) left it no room.
test: testbin browser lint
	@rm -rf $(CACHE)/test-artifacts && mkdir -p $(CACHE)/test-artifacts
	DRIFTSCAN_REQUIRE_CLUSTER=1 DRIFTSCAN_REQUIRE_BROWSER=1 $(GO) test -count=1 -timeout 30m -artifacts -outputdir $(CACHE)/test-artifacts ./...
	@$(MAKE) --no-print-directory fuzz FUZZTIME=5s

# Every fuzz target in the repository, as package:Function.
FUZZ_TARGETS := $(shell grep -rn --include='*_test.go' --exclude-dir=.cache --exclude-dir=.git --exclude-dir=node_modules '^func Fuzz' . | sed -E 's|^\./(.*)/[^/]*:[0-9]+:func (Fuzz[A-Za-z0-9_]*)[^A-Za-z0-9_].*|\1:\2|' | sort)
FUZZTIME     ?= 2m
# Each fuzz run is bounded as the hostile tests' children are (fixtures/bounded): the
# fuzzers feed YAML, JSON and jq to parsers that a bomb could make allocate without end,
# and one runaway process freezes a machine with no swap. A worker past the bound dies,
# and the run fails with that input written.
FUZZ_MEM_KB  ?= 6291456
FUZZ_DEADLINE ?= 30m

## fuzz: run every fuzz target for FUZZTIME each (default 2m), each run in 6 GiB of address space and 30 minutes; crashers land in testdata/fuzz
# Go 1.26's fuzzing coordinator can end a run with "context deadline exceeded" when
# -fuzztime runs out while a worker is busy (golang/go#75804, fixed in Go 1.27): no input
# failed, and none is written. Such a run is tried once more; any other failure, or a
# failing input written, fails at once.
fuzz:
	@set -e; log=$$(mktemp -t driftscan-fuzz.XXXXXX); trap 'rm -f $$log' EXIT; \
	for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; fn=$${t##*:}; \
	  echo "fuzz $$pkg $$fn for $(FUZZTIME)"; \
	  for try in 1 2; do \
	    if (ulimit -v $(FUZZ_MEM_KB) && exec timeout -k 10 $(FUZZ_DEADLINE) $(GO) test ./$$pkg -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) -parallel 1) > $$log 2>&1; then break; fi; \
	    if [ $$try = 1 ] && grep -q 'context deadline exceeded' $$log && ! grep -q 'Failing input written' $$log; then \
	      echo "  the fuzzing engine's deadline race (golang/go#75804), no input failed: once more"; continue; \
	    fi; \
	    cat $$log; exit 1; \
	  done; \
	  tail -1 $$log; \
	done

## demo: a real scan of a real local API server, with drift made by each kind of actor
## (it needs kube-apiserver and etcd only, not the reconcilers make test builds)
demo: $(TESTBIN)/kube-apiserver $(TESTBIN)/etcd build
	@$(GO) run ./fixtures/demo -driftscan $(BIN)/driftscan

## bench: the scan at scale, side by side with kubectl diff (not part of make test); BENCHFLAGS=-scaling adds 1k/5k/20k, -audit a scan with the audit log
BENCHFLAGS ?=
bench: testbin build
	$(GO) run ./bench -driftscan $(BIN)/driftscan -out bench/results/latest.json $(BENCHFLAGS)
	$(GO) test -run '^$$' -bench . -benchmem ./scanner/ ./render/ ./classify/

## image: the container image (needs a Docker engine, which these machines lack)
image:
	docker build -t driftscan:$(VERSION) --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) .

clean:
	rm -rf $(BIN)
