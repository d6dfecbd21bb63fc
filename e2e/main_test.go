// Package e2e runs driftscan against the real reconcilers: Argo CD v3.5.7 and
// Flux (source-, kustomize- and helm-controller) running as local processes
// against the test control plane, reconciling Git repositories that the
// tests write and serve on loopback. Every test drives the driftscan binary,
// built once for the package, the way a user runs it.
//
// It is a package of its own, rather than tests inside discover/ or
// breakglass/, because what it proves crosses them all (discovery, scan,
// breakglass, backport, and the reconciler in between), and because
// starting Argo CD and Flux once per package is what keeps it affordable.
package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/reconcilers"
)

var (
	env       *cluster.Env
	argo      *reconcilers.ArgoCD
	flux      *reconcilers.Flux
	gitServer *reconcilers.GitServer
	driftscan string // the binary

	// Why each part did not start, for the tests that need it.
	envErr, argoErr, fluxErr error
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	flag.Parse()
	// envtest logs through controller-runtime's logger; this package reads
	// the controllers' own logs instead.
	ctrllog.SetLogger(logr.Discard())
	require := os.Getenv(cluster.RequireEnv) == "1"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute) // within make test's -timeout 30m
	defer cancel()
	dir, err := os.MkdirTemp("", "driftscan-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// The binary's scan cache (--cache-dir's default) stays in dir.
	os.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))

	// How long each start took is said either way: on a slow day the
	// start-up has taken 8.5 minutes, and which part took it is the
	// first thing to know.
	start := time.Now()
	var took []string
	timed := func(what string, f func() error) error {
		t := time.Now()
		err := f()
		took = append(took, fmt.Sprintf("%s %s", what, time.Since(t).Round(100*time.Millisecond)))
		return err
	}
	if envErr = timed("control plane and kube-controller-manager", func() (err error) {
		env, err = cluster.StartWith(cluster.Options{ControllerManager: true})
		return err
	}); envErr == nil {
		defer env.Stop()
		if gitServer, envErr = reconcilers.ServeGit(); envErr == nil {
			defer gitServer.Close()
		}
	}
	if envErr == nil {
		envErr = timed("driftscan build", func() error { return buildDriftscan(ctx, dir) })
	}
	if envErr == nil {
		if argoErr = timed("Argo CD", func() (err error) {
			argo, err = reconcilers.StartArgoCD(ctx, env, reconcilers.DefaultArgoCDOptions())
			return err
		}); argoErr == nil {
			defer argo.Stop()
		}
		if fluxErr = timed("Flux", func() (err error) {
			flux, err = reconcilers.StartFlux(ctx, env, reconcilers.DefaultFluxOptions())
			return err
		}); fluxErr == nil {
			defer flux.Stop()
		}
	} else {
		argoErr, fluxErr = envErr, envErr
	}
	fmt.Fprintf(os.Stderr, "e2e start-up: %s\n", strings.Join(took, ", "))
	if err := errorsOf(envErr, argoErr, fluxErr); err != "" {
		if require {
			fmt.Fprintf(os.Stderr, "FAIL: the real reconcilers did not start (%s=1):\n%s\nRun `make testbin` to build them.\n", cluster.RequireEnv, err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "warning: tests that need them will be skipped:\n%s\n", err)
	} else {
		fmt.Fprintf(os.Stderr, "control plane, Argo CD and Flux started in %s\n", time.Since(start).Round(100*time.Millisecond))
	}
	return m.Run()
}

func errorsOf(envErr, argoErr, fluxErr error) string {
	switch {
	case envErr != nil:
		return "  control plane: " + envErr.Error()
	case argoErr != nil && fluxErr != nil:
		return "  Argo CD: " + argoErr.Error() + "\n  Flux: " + fluxErr.Error()
	case argoErr != nil:
		return "  Argo CD: " + argoErr.Error()
	case fluxErr != nil:
		return "  Flux: " + fluxErr.Error()
	}
	return ""
}

// buildDriftscan builds the driftscan binary once for the package.
func buildDriftscan(ctx context.Context, dir string) error {
	driftscan = filepath.Join(dir, "driftscan")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", driftscan, "../cmd/driftscan")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build driftscan: %w\n%s", err, out)
	}
	return nil
}

// needArgo skips (or, under DRIFTSCAN_REQUIRE_CLUSTER=1, TestMain has
// already failed) when Argo CD is not running.
func needArgo(t *testing.T) {
	t.Helper()
	if argo == nil {
		t.Skipf("no Argo CD (run `make testbin`, or set %s=1 to fail instead): %v", cluster.RequireEnv, argoErr)
	}
	if err := argo.Running(); err != nil {
		t.Fatal(err)
	}
}

// needFlux is needArgo for Flux.
func needFlux(t *testing.T) {
	t.Helper()
	if flux == nil {
		t.Skipf("no Flux (run `make testbin`, or set %s=1 to fail instead): %v", cluster.RequireEnv, fluxErr)
	}
	if err := flux.Running(); err != nil {
		t.Fatal(err)
	}
}
