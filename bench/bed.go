package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/openapi3"
	"sigs.k8s.io/yaml"

	"github.com/calricon/driftscan/fixtures/cluster"
)

// crdFile is the CRD of the generated Route objects, relative to the
// repository root (where `make bench` runs).
const crdFile = "fixtures/crds/routes.example.com.yaml"

// routeGVK is the kind crdFile serves.
var routeGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Route"}

// bed is a running control plane holding one generated estate, synced as
// argocd-controller and drifted by the plan's actors.
type bed struct {
	env  *cluster.Env
	est  *estate
	plan plan
	// ApplySeconds and DriftSeconds are how long syncing and drifting took.
	ApplySeconds, DriftSeconds float64
	// ServerVersion is the kube-apiserver's version.
	ServerVersion string
	// cp samples the control plane's processes; nil when they cannot be
	// read, and then no tool's server cost is measured.
	cp *controlPlane

	stopWebhook func()
	// beforeRun, when set, runs before each timed run of driftscan (and
	// its floor), outside the timing: timeWarm's touch.
	beforeRun func(ctx context.Context) error
}

// newBed starts a control plane (writing an audit log when withAudit is
// set), installs the Route CRD, serves the test
// webhook, writes an estate to dir and syncs and drifts it. Close stops
// everything newBed started, also when it returns an error.
func newBed(ctx context.Context, dir string, spec estateSpec, driftPercent float64, workers int, withAudit bool) (b *bed, err error) {
	b = &bed{}
	defer func() {
		if err != nil {
			b.Close()
			b = nil
		}
	}()
	est, err := writeEstate(dir, spec)
	if err != nil {
		return b, fmt.Errorf("write repository: %w", err)
	}
	b.est = est
	say("generated %d objects in %d apps over %d namespaces in %s", len(est.Objects), spec.Apps, spec.Namespaces, est.Repo)

	say("starting a local kube-apiserver and etcd (the ones the tests use)...")
	var opts cluster.Options
	if withAudit {
		// The default policy: writes of the estate's kinds with their
		// bodies, everything else at Metadata level.
		opts.Audit = &cluster.AuditOptions{}
	}
	if b.env, err = cluster.StartWith(opts); err != nil {
		return b, err
	}
	if v, err := b.env.Client.Discovery().ServerVersion(); err == nil {
		b.ServerVersion = v.GitVersion
	}
	if err := installCRD(ctx, b.env, crdFile); err != nil {
		return b, err
	}
	if len(est.Labelled) > 0 {
		// Registered before anything is applied in the labelled namespaces,
		// so it injects at creation, as a mesh does.
		if b.stopWebhook, err = b.env.StartWebhook(ctx, cluster.DefaultWebhook("istio-sidecar-injector")); err != nil {
			return b, err
		}
	}
	for _, ns := range est.Namespaces {
		var labels map[string]string
		if est.Labelled[ns] {
			labels = webhookLabel
		}
		if err := b.env.CreateNamespace(ctx, ns, labels); err != nil {
			return b, err
		}
	}

	start := time.Now()
	err = parallel(ctx, workers, len(est.Objects), "applied", func(ctx context.Context, i int) error {
		_, err := b.env.ApplyAs(ctx, "argocd-controller", est.Objects[i].DeepCopy())
		return err
	})
	if err != nil {
		return b, fmt.Errorf("sync as argocd-controller: %w", err)
	}
	b.ApplySeconds = time.Since(start).Seconds()
	say("synced %d objects as argocd-controller in %.1fs (%d writers)", len(est.Objects), b.ApplySeconds, workers)

	b.plan = makePlan(est, driftPercent)
	start = time.Now()
	if err := b.plan.run(ctx, b.env, workers); err != nil {
		return b, err
	}
	b.DriftSeconds = time.Since(start).Seconds()
	say("drifted %d objects (%s) in %.1fs", len(b.plan), b.plan.summary(), b.DriftSeconds)
	if b.cp, err = findControlPlane(idleSample, maxSettle); err != nil {
		say("the control plane's CPU and bytes are not measured: %v", err)
		b.cp, err = nil, nil
	} else {
		say("control plane at rest: %.3f CPU s per second (after waiting %.0fs for it to settle)", b.cp.idlePerSecond, b.cp.settled.Seconds())
		debug := b.env.Client.Discovery().RESTClient()
		b.cp.collect = func() error {
			return debug.Get().AbsPath("/debug/pprof/heap").Param("gc", "1").Do(ctx).Error()
		}
	}
	return b, nil
}

// idleSample is how long the control plane's own CPU use is sampled with
// nothing asking, after the estate is synced and drifted.
const idleSample = 3 * time.Second

// maxSettle is how long the bench waits at most for the control plane to
// come to rest after the estate is synced (findControlPlane).
const maxSettle = 5 * time.Minute

// Close stops the webhook and the control plane. It may be called again.
func (b *bed) Close() {
	if b.stopWebhook != nil {
		b.stopWebhook()
		b.stopWebhook = nil
	}
	if b.env != nil {
		if err := b.env.Stop(); err != nil {
			say("stop control plane: %v", err)
		}
		b.env = nil
		say("stopped the control plane")
	}
}

// installCRD applies a CRD file as argocd-controller and waits until the API
// server publishes the schema of each version, as cluster.Env.InstallCRDs
// does for tests.
func installCRD(ctx context.Context, env *cluster.Env, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read CRD (run from the repository root): %w", err)
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &crd.Object); err != nil {
		return fmt.Errorf("parse CRD %s: %w", path, err)
	}
	if _, err := env.ApplyAs(ctx, "argocd-controller", crd); err != nil {
		return err
	}
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	root := openapi3.NewRoot(env.Client.Discovery().OpenAPIV3())
	for _, v := range versions {
		name, _ := v.(map[string]any)["name"].(string)
		gv := schema.GroupVersion{Group: group, Version: name}
		suffix := "." + name + "." + kind
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			doc, err := root.GVSpec(gv)
			if err != nil || doc.Components == nil {
				return false, nil
			}
			for s := range doc.Components.Schemas {
				if strings.HasSuffix(s, suffix) {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s: the API server never published the schema of %s: %w", crd.GetName(), gv, err)
		}
	}
	env.RefreshMapper()
	return nil
}

// parallel runs do(0..n-1) on workers goroutines, stops at the first error
// and reports progress every tenth of the way.
func parallel(ctx context.Context, workers, n int, verb string, do func(context.Context, int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var done atomic.Int64
	var wg sync.WaitGroup
	step := int64(max(n/10, 1))
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := do(ctx, i); err != nil {
					cancel(err)
					return
				}
				if d := done.Add(1); d%step == 0 && n >= 1000 {
					say("  %s %d/%d", verb, d, n)
				}
			}
		}()
	}
feed:
	for i := 0; i < n; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}
