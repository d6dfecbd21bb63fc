package discover

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/render"
	"github.com/calricon/driftscan/report"
	"github.com/calricon/driftscan/scanner"
)

// syncAs renders a folder of fixtures/discover/repo and server-side applies
// every object into ns as manager, the way the reconciler syncs it.
func syncAs(t *testing.T, manager, ns, folder string) {
	t.Helper()
	dir, err := filepath.Abs(fixture("discover", "repo", folder))
	if err != nil {
		t.Fatal(err)
	}
	manifests, err := render.Manifests(t.Context(), render.Options{Dir: dir, Namespace: ns})
	if err != nil {
		t.Fatalf("render %s: %v", folder, err)
	}
	for _, mf := range manifests {
		env.Apply(t, manager, ns, mf.Object)
	}
}

// scan scans the discovered apps and rules, as `driftscan scan --from` does.
func scan(t *testing.T, res Result) *report.Report {
	t.Helper()
	return scanWith(t, res, nil)
}

// scanWith is scan with its options changed by mutate.
func scanWith(t *testing.T, res Result, mutate func(*scanner.Options)) *report.Report {
	t.Helper()
	env.Need(t)
	cfg := &config.Config{APIVersion: config.APIVersion, Kind: config.Kind, Apps: res.Apps, Ignore: res.Ignore}
	opts := scanner.DefaultOptions()
	opts.RESTConfig = env.Config
	opts.GitCacheDir = t.TempDir()
	opts.Now = func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }
	if mutate != nil {
		mutate(&opts)
	}
	r, err := scanner.Scan(t.Context(), cfg, opts)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	for _, a := range r.Apps {
		if a.Error != "" {
			t.Fatalf("app %s: %s", a.Name, a.Error)
		}
	}
	return r
}

// finding is a finding reduced to what these tests assert.
type finding struct {
	Object, Path string
	Class        report.Class
	Manager      string
	Git, Live    string
	Ignored      bool
	IgnoredBy    string
	Hint         string
}

func findings(r *report.Report, ns string) []finding {
	var out []finding
	for _, a := range r.Apps {
		for _, o := range a.Objects {
			for _, f := range o.Findings {
				got := finding{Object: o.Kind + "/" + o.Name, Path: f.Path, Class: f.Class, Manager: f.Manager, Git: f.Git, Live: f.Live, Ignored: f.Ignored, Hint: strings.ReplaceAll(f.Hint, ns, "NS")}
				if f.IgnoreRule != nil {
					got.IgnoredBy = f.IgnoreRule.Reason
				}
				out = append(out, got)
			}
		}
	}
	return out
}

func TestAScanOfAnArgoCDApplication(t *testing.T) {
	installCRDs(t)
	ns := env.Namespace(t, nil)
	repo, _ := gitRepo(t)
	allowProjects(t, ns, "shop")
	applyAll(t, "argocd-server", ns, strings.NewReplacer("REPO", repo, "NS", ns).Replace(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web, labels: {team: team-web}}
spec:
  project: shop
  destination: {server: https://kubernetes.default.svc, namespace: NS}
  source: {repoURL: REPO, targetRevision: main, path: apps/web}
  syncPolicy: {automated: {selfHeal: true, prune: true}}
  ignoreDifferences:
  - {group: apps, kind: Deployment, jsonPointers: [/spec/replicas]}
`))
	res := discover(t, options(FromArgoCD, ns))
	if len(res.Errors) > 0 || len(res.Apps) != 1 {
		t.Fatalf("discovered %d apps, errors %v", len(res.Apps), res.Errors)
	}
	syncAs(t, "argocd-controller", ns, "apps/web")
	// A human edits the ConfigMap at 3 AM and scales the Deployment, which
	// the Application's ignoreDifferences allows.
	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "web-config", types.MergePatchType, `{"data":{"LOG_LEVEL":"debug"}}`)
	env.Scale(t, "kubectl", cluster.Deployment, ns, "web", 5)

	r := scan(t, res)
	want := []finding{
		{
			Object: "ConfigMap/web-config", Path: ".data.LOG_LEVEL", Class: report.ClassHuman, Manager: "kubectl-edit", Git: "info", Live: "debug",
			Hint: "self-heal is on for Application/NS/web: this change will be reverted at the next sync; carry it back to Git or suspend sync first",
		},
		{
			Object: "Deployment/web", Path: ".spec.replicas", Class: report.ClassHuman, Manager: "kubectl", Git: "2", Live: "5",
			Ignored: true, IgnoredBy: "imported from Argo CD",
			// Out of Argo CD's diff: self-heal does not revert it, any sync does.
			Hint: "Argo CD leaves this field out of its diff, so Application/NS/web shows Synced and self-heal never acts on it, but a sync still applies Git's value: the next sync, for any change, puts it back; add the sync option RespectIgnoreDifferences=true to keep the live value, or carry it back to Git",
		},
	}
	// Everything else argocd-controller applied, it owns: no drift.
	if d := diff(want, findings(r, ns)); d != "" {
		t.Errorf("findings (-want +got):\n%s", d)
	}
	if g := r.Apps[0].GitOps; g == nil || !g.SelfHeal || !g.Prune || g.Object != "Application/"+ns+"/web" {
		t.Errorf("GitOps = %+v", g)
	}
	if len(r.Debts) != 0 {
		t.Errorf("debts %+v: the imported rule matched, so it is no debt", r.Debts)
	}
}

func TestAScanOfAFluxKustomization(t *testing.T) {
	installCRDs(t)
	ns := env.Namespace(t, nil)
	repo, commit := gitRepo(t)
	applyAll(t, "flux", ns, strings.NewReplacer("REPO", repo, "NS", ns).Replace(`
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: deploy}
spec: {interval: 1m, url: REPO, ref: {branch: main}}
`), strings.NewReplacer("NS", ns).Replace(`
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: shop}
spec:
  interval: 5m
  sourceRef: {kind: GitRepository, name: deploy}
  path: ./apps/web-kustomize
  targetNamespace: NS
  prune: true
`))
	env.Patch(t, "source-controller", gitRepositoryGVK, ns, "deploy", types.MergePatchType, `{"status":{"artifact":{"revision":"main@sha1:`+commit+`"}}}`, "status")
	res := discover(t, options(FromFlux, ns))
	if len(res.Errors) > 0 || len(res.Apps) != 1 {
		t.Fatalf("discovered %d apps, errors %v", len(res.Apps), res.Errors)
	}
	syncAs(t, "kustomize-controller", ns, "apps/web-kustomize")
	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "shop-config", types.MergePatchType, `{"data":{"CURRENCY":"USD"}}`)

	r := scan(t, res)
	want := []finding{{
		Object: "ConfigMap/shop-config", Path: ".data.CURRENCY", Class: report.ClassHuman, Manager: "kubectl-edit", Git: "EUR", Live: "USD",
		Hint: "self-heal is on for Kustomization/NS/shop: this change will be reverted at the next sync; carry it back to Git or suspend sync first",
	}}
	if d := diff(want, findings(r, ns)); d != "" {
		t.Errorf("findings (-want +got):\n%s", d)
	}
	if got := r.Apps[0].Source.Commit; got != commit {
		t.Errorf("scanned commit %s, want the artifact's %s", got, commit)
	}
}

// TestASuspendedKustomizationGetsNoSelfHealHint: Flux reverts nothing while
// a Kustomization is suspended, so a human change stays.
func TestASuspendedKustomizationGetsNoSelfHealHint(t *testing.T) {
	installCRDs(t)
	ns := env.Namespace(t, nil)
	repo, _ := gitRepo(t)
	applyAll(t, "flux", ns, strings.NewReplacer("REPO", repo).Replace(`
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: deploy}
spec: {interval: 1m, url: REPO, ref: {branch: main}}
`), strings.NewReplacer("NS", ns).Replace(`
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: shop}
spec:
  interval: 5m
  sourceRef: {kind: GitRepository, name: deploy}
  path: apps/web-kustomize
  targetNamespace: NS
  prune: true
  suspend: true
`))
	res := discover(t, options(FromFlux, ns))
	syncAs(t, "kustomize-controller", ns, "apps/web-kustomize")
	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "shop-config", types.MergePatchType, `{"data":{"CURRENCY":"USD"}}`)
	r := scan(t, res)
	want := []finding{{Object: "ConfigMap/shop-config", Path: ".data.CURRENCY", Class: report.ClassHuman, Manager: "kubectl-edit", Git: "EUR", Live: "USD"}}
	if d := diff(want, findings(r, ns)); d != "" {
		t.Errorf("findings (-want +got):\n%s", d)
	}
}
