package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/reconcilers"
	"github.com/calricon/driftscan/report"
)

// holdFor is how long a paused app must keep a human's edit: many times
// what self-heal takes to revert it.
const holdFor = 20 * time.Second

// hotfixReported checks that a scan during the break-glass reports exactly
// the human's hotfix, LOG_LEVEL debug by kubectl-edit, and names the
// suspension given for reason.
func hotfixReported(t *testing.T, r *report.Report, reason string) {
	t.Helper()
	got := activeFindings(r)
	if len(got) != 1 || got[0].Object != "ConfigMap/web-config" || got[0].Path != ".data.LOG_LEVEL" || got[0].Class != report.ClassHuman || got[0].Manager != "kubectl-edit" || got[0].Live != "debug" {
		t.Fatalf("want exactly one human finding, LOG_LEVEL debug by kubectl-edit; got:\n%s", describe(got))
	}
	if b := r.Apps[0].Breakglass; b == nil || b.Reason != reason || b.Expired {
		t.Errorf("the report does not name the suspension: %+v", r.Apps[0].Breakglass)
	}
}

// humanEdit changes LOG_LEVEL in the app's ConfigMap the way `kubectl edit`
// does (a PUT as manager kubectl-edit).
func humanEdit(t *testing.T, ns, level string) {
	t.Helper()
	humanEditOf(t, ns, "web-config", level)
}

// humanEditOf is humanEdit of the ConfigMap cm.
func humanEditOf(t *testing.T, ns, cm, level string) {
	t.Helper()
	if _, err := env.PatchAs(t.Context(), "kubectl-edit", cluster.ConfigMap, ns, cm, types.MergePatchType, `{"data":{"LOG_LEVEL":"`+level+`"}}`); err != nil {
		t.Fatal(err)
	}
}

// logLevel reads LOG_LEVEL from the app's ConfigMap.
func logLevel(ctx context.Context, ns string) (string, error) {
	return logLevelOf(ctx, ns, "web-config")
}

// logLevelOf reads LOG_LEVEL from the ConfigMap cm.
func logLevelOf(ctx context.Context, ns, cm string) (string, error) {
	c, err := env.Client.CoreV1().ConfigMaps(ns).Get(ctx, cm, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return c.Data["LOG_LEVEL"], nil
}

// waitReverted waits until LOG_LEVEL is want again and returns how long it
// took, or fails after limit.
func waitReverted(t *testing.T, ns, want string, limit time.Duration) time.Duration {
	t.Helper()
	return waitRevertedOf(t, ns, "web-config", want, limit)
}

// waitRevertedOf is waitReverted of the ConfigMap cm.
func waitRevertedOf(t *testing.T, ns, cm, want string, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	var got string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, limit, true, func(ctx context.Context) (bool, error) {
		v, err := logLevelOf(ctx, ns, cm)
		got = v
		return err == nil && v == want, nil
	})
	if err != nil {
		t.Fatalf("LOG_LEVEL of %s is still %q after %s, want it reverted to %q", cm, got, limit, want)
	}
	return time.Since(start)
}

// holds checks that LOG_LEVEL stays want for the whole of d.
func holds(t *testing.T, ns, want string, d time.Duration) {
	t.Helper()
	holdsOf(t, ns, "web-config", want, d)
}

// holdsOf is holds of the ConfigMap cm.
func holdsOf(t *testing.T, ns, cm, want string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		got, err := logLevelOf(t.Context(), ns, cm)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("LOG_LEVEL of %s became %q %s into the wait, want %q to hold for %s", cm, got, d-time.Until(deadline), want, d)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// The 3 AM drill, with the real Argo CD: a human's hotfix is reverted by
// self-heal within seconds; after `driftscan breakglass suspend` it holds;
// the scan reports it as the one human finding of a suspended app;
// backport writes it into Git; once Git has it, resume brings self-heal
// back and nothing is reverted.
func TestArgoCDThreeAMDrill(t *testing.T) {
	needArgo(t)
	t.Parallel()
	ns := env.Namespace(t, nil)
	repo := gitServer.NewRepo(t, plainApp)
	const app = "drill"
	createArgoApp(t, argoApp{Name: app, Namespace: ns, Repo: repo, Path: "web", Automated: "{selfHeal: true, prune: true}"})
	waitArgoSynced(t, app, repo.Head())

	humanEdit(t, ns, "debug")
	t.Logf("Argo CD self-heal reverted the human edit in %s", waitReverted(t, ns, "info", time.Minute))

	res := runDriftscan(t, "breakglass", "suspend", app, "--reason", "INC-4211 debug logs", "--ttl", "1h")
	if res.Code != 0 {
		t.Fatalf("breakglass suspend: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
	humanEdit(t, ns, "debug")
	holds(t, ns, "debug", holdFor)

	r := scan(t, "--from", "argocd", "--app", app)
	hotfixReported(t, r, "INC-4211 debug logs")

	checkout := repo.Clone(t)
	res = runDriftscan(t, "backport", app, "--repo", checkout, "--path", filepath.Join(checkout, "web"), "-n", ns, "--reason", "INC-4211 debug logs", "--branch", "hotfix/inc-4211")
	if res.Code != 0 {
		t.Fatalf("backport: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
	if diff := reconcilers.Git(t, checkout, "diff", "main", "hotfix/inc-4211", "--", "web/config.yaml"); !strings.Contains(diff, "-  LOG_LEVEL: info") || !strings.Contains(diff, "+  LOG_LEVEL: debug") {
		t.Fatalf("backport's commit does not carry LOG_LEVEL: debug:\n%s", diff)
	}
	// The hotfix is reviewed and merged.
	reconcilers.Git(t, checkout, "push", "--quiet", "origin", "hotfix/inc-4211:main")
	merged := reconcilers.Git(t, checkout, "rev-parse", "hotfix/inc-4211")
	data, err := os.ReadFile(filepath.Join(checkout, "web/config.yaml"))
	if err != nil || !strings.Contains(string(data), "LOG_LEVEL: debug") {
		t.Fatalf("web/config.yaml after backport: %s %v", data, err)
	}

	res = runDriftscan(t, "breakglass", "resume", app)
	if res.Code != 0 {
		t.Fatalf("breakglass resume: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
	refreshArgoApp(t, app)
	waitArgoSynced(t, app, merged)
	holds(t, ns, "debug", holdFor)
	if a := getArgoApp(t, app); a.GetAnnotations()["driftscan.dev/breakglass-until"] != "" {
		t.Errorf("the Application still carries the suspension after resume")
	}
}
