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

.PHONY: all build test testbin lint demo bench fuzz image clean

all: build

## build: the driftscan binary in bin/
build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/driftscan ./cmd/driftscan

## testbin: kube-apiserver, etcd and kube-controller-manager built from Go modules (once; cached in .cache/testbin)
testbin: $(TESTBIN)/kube-apiserver $(TESTBIN)/etcd $(TESTBIN)/kube-controller-manager $(TESTBIN)/argodiff
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

## lint: go vet and gofmt
lint:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.cache/*')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## test: everything, against the real control plane (fails, never skips, if it cannot start),
## then each fuzz target for a few seconds
test: testbin lint
	DRIFTSCAN_REQUIRE_CLUSTER=1 $(GO) test -count=1 ./...
	@$(MAKE) --no-print-directory fuzz FUZZTIME=5s

# The fuzz targets, as package:target.
FUZZ_TARGETS := config:FuzzParseConfig render:FuzzRenderYAML classify:FuzzIgnoreRule report:FuzzWriteFinding
FUZZTIME     ?= 2m

## fuzz: run every fuzz target for FUZZTIME each (default 2m); crashers land in testdata/fuzz
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; fn=$${t##*:}; \
	  echo "fuzz $$pkg $$fn for $(FUZZTIME)"; \
	  $(GO) test ./$$pkg -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) -parallel 1 > /tmp/driftscan-fuzz.log 2>&1 || { cat /tmp/driftscan-fuzz.log; exit 1; }; \
	  tail -1 /tmp/driftscan-fuzz.log; \
	done

## demo: a real scan of a real local API server, with drift made by each kind of actor
demo: testbin build
	@$(GO) run ./fixtures/demo -driftscan $(BIN)/driftscan

## bench: the scan at scale, side by side with kubectl diff (not part of make test); BENCHFLAGS=-scaling adds 1k/5k/20k
BENCHFLAGS ?=
bench: testbin build
	$(GO) run ./bench -driftscan $(BIN)/driftscan -out bench/results/latest.json $(BENCHFLAGS)
	$(GO) test -run '^$$' -bench . -benchmem ./scanner/ ./render/ ./classify/

## image: the container image (needs a Docker engine, which these machines lack)
image:
	docker build -t driftscan:$(VERSION) --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) .

clean:
	rm -rf $(BIN)
