// Command bench measures driftscan at scale on the local control plane the
// tests use, side by side with `kubectl diff --server-side`. It starts
// kube-apiserver and etcd, generates a plain-YAML GitOps repository of
// -objects objects over -apps apps in -namespaces namespaces, applies it as
// argocd-controller, drifts 5% of it through real actors (a pipeline's
// `kubectl set image`, a human's `kubectl edit`, the HPA through the scale
// subresource, a sidecar-injecting webhook), then times both tools over the
// same files and checks that they agree. It prints one table and writes it as
// JSON to -out. Everything it starts it stops, and the temporary repository
// is removed, also on error or interrupt. `make bench` runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// Options configure one benchmark run.
type Options struct {
	// Driftscan is the driftscan binary; Kubectl the reference kubectl
	// ("" skips the kubectl column).
	Driftscan string
	Kubectl   string
	// Objects, Apps and Namespaces size the generated repository.
	Objects    int
	Apps       int
	Namespaces int
	// WebhookNamespaces are labelled istio-injection=enabled, so the test
	// webhook injects a sidecar into their Deployments.
	WebhookNamespaces int
	// DriftPercent of the objects are drifted (the webhook's included).
	DriftPercent float64
	// Workers apply objects concurrently.
	Workers int
	// Runs times each tool this many times and keeps the median run.
	Runs int
	// Out is where the result is written as JSON ("" for nowhere).
	Out string
	// Scaling also scans ScalingSizes objects with driftscan alone.
	Scaling      bool
	ScalingSizes []int
	// Mix also scans ScalingSizes objects in estates where a third of
	// the apps are Helm charts and a third kustomizations (mixedApp).
	Mix bool
	// CPUProfile, when set, is where a CPU profile of an in-process scan of
	// the main repository is written.
	CPUProfile string
	// BinaryProfile, when set, is where a CPU profile of one more run of
	// the driftscan binary (--profile cpu), after the timed ones, is written.
	BinaryProfile string
	// Latency, when set, is the one-way delay between the timed tools and
	// the API server of the main estate (latency.go).
	Latency time.Duration
	// Timeout bounds the whole run.
	Timeout time.Duration
	// Keep leaves the generated repository and the tools' outputs behind.
	Keep bool
	// Serve keeps the control plane and the estate up after setting them
	// up (and the delay line, with Latency), times nothing, and waits for
	// the timeout or Ctrl-C: for running the tools by hand.
	Serve bool
	// Rusage is the bench/rusage launcher; "" builds it with `go build`.
	Rusage string
	// Audit starts the control plane with an audit log and also times the
	// scan with --audit-log.
	Audit bool
	// ListFloor is the bench/listfloor program; "" builds it.
	ListFloor string
	// HeapProfile, when set, is where the heap profile of an in-process
	// scan of the estate of HeapProfileObjects objects (the main one or a
	// scaling size) is written.
	HeapProfile        string
	HeapProfileObjects int
	// LimitAS bounds each timed tool's address space, in bytes; 0 is none.
	LimitAS int64
	// Shards, when above 1, also scans an estate of ShardObjects objects
	// as that many shards, and a share of it alone.
	Shards       int
	ShardObjects int
	// ShardBy is the shards' --shard-by.
	ShardBy string
}

// DefaultOptions returns what `make bench` runs.
func DefaultOptions() Options {
	return Options{
		Driftscan:          "bin/driftscan",
		Kubectl:            "kubectl",
		Objects:            5000,
		Apps:               200,
		Namespaces:         20,
		WebhookNamespaces:  1,
		DriftPercent:       5,
		Workers:            8,
		Runs:               1,
		Out:                "bench/results/latest.json",
		ScalingSizes:       []int{1000, 5000, 20000},
		Timeout:            45 * time.Minute,
		HeapProfileObjects: 20000,
		LimitAS:            8 << 30,
		ShardObjects:       100000,
		ShardBy:            "namespace",
	}
}

func main() {
	o := DefaultOptions()
	sizes := joinInts(o.ScalingSizes)
	flag.StringVar(&o.Driftscan, "driftscan", o.Driftscan, "the driftscan binary to time")
	flag.StringVar(&o.Kubectl, "kubectl", o.Kubectl, "the kubectl binary to compare with (1.28 or newer); empty to skip")
	flag.IntVar(&o.Objects, "objects", o.Objects, "objects in the generated repository")
	flag.IntVar(&o.Apps, "apps", o.Apps, "apps (one folder each)")
	flag.IntVar(&o.Namespaces, "namespaces", o.Namespaces, "namespaces the apps are spread over")
	flag.IntVar(&o.WebhookNamespaces, "webhook-namespaces", o.WebhookNamespaces, "namespaces whose Deployments the test webhook mutates")
	flag.Float64Var(&o.DriftPercent, "drift", o.DriftPercent, "percent of the objects to drift")
	flag.IntVar(&o.Workers, "workers", o.Workers, "concurrent writers when applying and drifting")
	flag.IntVar(&o.Runs, "runs", o.Runs, "time each tool this many times and keep the median")
	flag.StringVar(&o.Out, "out", o.Out, "write the result as JSON here (empty: do not write)")
	flag.BoolVar(&o.Scaling, "scaling", o.Scaling, "also time driftscan alone at -scaling-sizes objects")
	flag.BoolVar(&o.Mix, "mix", o.Mix, "also time driftscan alone at -scaling-sizes objects where a third of the apps are Helm charts and a third kustomizations")
	flag.StringVar(&sizes, "scaling-sizes", sizes, "comma-separated object counts for -scaling")
	flag.StringVar(&o.CPUProfile, "cpuprofile", o.CPUProfile, "also scan in process 5 times under the CPU profiler and write the profile here")
	flag.StringVar(&o.BinaryProfile, "binary-cpuprofile", o.BinaryProfile, "also run the driftscan binary once more with --profile cpu and write its profile here (the whole process: start-up, render, LISTs, compare, report), and once with the scan cache to FILE.warm")
	flag.DurationVar(&o.Timeout, "timeout", o.Timeout, "give up after this long")
	flag.DurationVar(&o.Latency, "latency", o.Latency, "time the tools on the main estate through a delay line of this long each way to the API server, as across a network (0: none)")
	flag.BoolVar(&o.Keep, "keep", o.Keep, "keep the generated repository and the tools' outputs")
	flag.BoolVar(&o.Serve, "serve", o.Serve, "set up the control plane and the estate, print how to scan them, and wait for Ctrl-C (times nothing)")
	flag.StringVar(&o.Rusage, "rusage", o.Rusage, "the bench/rusage launcher that measures peak RSS (default: build it)")
	flag.BoolVar(&o.Audit, "audit", o.Audit, "write an audit log on the control plane and also time the scan with --audit-log")
	flag.StringVar(&o.ListFloor, "listfloor", o.ListFloor, "the bench/listfloor program that measures the LIST floor (default: build it)")
	flag.StringVar(&o.HeapProfile, "heapprofile", o.HeapProfile, "write the heap profile of an in-process scan of the -heapprofile-objects estate here")
	flag.IntVar(&o.HeapProfileObjects, "heapprofile-objects", o.HeapProfileObjects, "the estate size (main or -scaling) that -heapprofile profiles")
	flag.IntVar(&o.Shards, "shards", o.Shards, "also scan -shard-objects objects as this many shards (--shard i/N), and a share of them alone")
	flag.IntVar(&o.ShardObjects, "shard-objects", o.ShardObjects, "the size of the sharded estate")
	flag.StringVar(&o.ShardBy, "shard-by", o.ShardBy, "the shards' --shard-by: namespace or app")
	flag.Int64Var(&o.LimitAS, "limit-as", o.LimitAS, "bound each timed tool's address space to this many bytes (prlimit --as); 0 for none")
	flag.Parse()
	// envtest logs through controller-runtime, which prints a stack trace
	// when no logger is set; the benchmark's own lines say what happens.
	ctrllog.SetLogger(logr.Discard())
	var err error
	if o.ScalingSizes, err = parseInts(sizes); err != nil {
		fmt.Fprintf(os.Stderr, "bench: -scaling-sizes: %v\n", err)
		os.Exit(2)
	}
	if err := o.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	err = run(ctx, o)
	cancel()
	stop()
	if err != nil {
		say("%v", err)
		os.Exit(1)
	}
}

// Validate checks that the sizes make a repository.
func (o Options) Validate() error {
	switch {
	case o.Objects < 4 || o.Apps < 1 || o.Namespaces < 1:
		return fmt.Errorf("need at least 4 objects, 1 app and 1 namespace")
	case o.Apps > o.Objects:
		return fmt.Errorf("-apps %d is more than -objects %d", o.Apps, o.Objects)
	case o.WebhookNamespaces < 0 || o.WebhookNamespaces > o.Namespaces:
		return fmt.Errorf("-webhook-namespaces must be between 0 and -namespaces")
	case o.DriftPercent < 0 || o.DriftPercent > 100:
		return fmt.Errorf("-drift must be a percentage")
	case o.Workers < 1 || o.Runs < 1:
		return fmt.Errorf("-workers and -runs must be at least 1")
	}
	return nil
}

func say(format string, args ...any) { fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...) }

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 4 {
			return nil, fmt.Errorf("%q is not an object count of at least 4", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}
