package discover

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/calricon/driftscan/classify"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/gitrepo"
	"github.com/calricon/driftscan/report"
)

var env *cluster.Env

func TestMain(m *testing.M) { os.Exit(cluster.Main(m, &env)) }

// The reconcilers' kinds, for the actors' gvk arguments.
var (
	gitRepositoryGVK = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "GitRepository"}
	helmReleaseGVK   = schema.GroupVersionKind{Group: "helm.toolkit.fluxcd.io", Version: "v2", Kind: "HelmRelease"}
	ociRepositoryGVK = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "OCIRepository"}
	kustomizationGVK = schema.GroupVersionKind{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"}
)

// expiry is the review date the tests give imported rules.
var expiry = time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC)

// fixture returns the path of a shared fixture.
func fixture(parts ...string) string {
	return filepath.Join(append([]string{"..", "fixtures"}, parts...)...)
}

// installCRDs installs the Argo CD and Flux CRDs, as Argo CD would.
func installCRDs(t *testing.T) {
	t.Helper()
	env.InstallCRDs(t, "argocd-controller",
		fixture("crds", "applications.argoproj.io.yaml"),
		fixture("crds", "appprojects.argoproj.io.yaml"),
		fixture("crds", "kustomizations.kustomize.toolkit.fluxcd.io.yaml"),
		fixture("crds", "helmreleases.helm.toolkit.fluxcd.io.yaml"),
		fixture("crds", "gitrepositories.source.toolkit.fluxcd.io.yaml"),
		fixture("crds", "helmrepositories.source.toolkit.fluxcd.io.yaml"),
		fixture("crds", "ocirepositories.source.toolkit.fluxcd.io.yaml"),
		fixture("crds", "helmcharts.source.toolkit.fluxcd.io.yaml"),
	)
}

// allowProjects creates, in the Argo CD namespace ns, AppProjects of the
// given names whose sourceRepos allow every repository.
func allowProjects(t *testing.T, ns string, names ...string) {
	t.Helper()
	for _, name := range names {
		applyAll(t, "argocd-server", ns, "apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: "+name+"}\nspec: {sourceRepos: ['*'], destinations: [{server: '*', namespace: '*'}], clusterResourceWhitelist: [{group: '*', kind: '*'}]}\n")
	}
}

// applyAll server-side applies manifests into ns as manager.
func applyAll(t *testing.T, manager, ns string, manifests ...string) {
	t.Helper()
	for _, m := range manifests {
		env.Apply(t, manager, ns, cluster.Object(t, m))
	}
}

// options are discovery options for the test control plane.
func options(from, ns string) Options {
	opts := DefaultOptions()
	opts.From = from
	opts.Namespace = ns
	opts.ServerURL = env.Config.Host
	opts.IgnoreExpiry = expiry
	// Small pages, so every test also reads through LIST continuations.
	opts.PageSize = 2
	return opts
}

// discover runs Discover against the test control plane.
func discover(t *testing.T, opts Options) Result {
	t.Helper()
	env.Need(t)
	res, err := Discover(t.Context(), env.Dynamic, opts)
	if err != nil {
		t.Fatalf("discover: %v", err)
	}
	return res
}

// errorTexts returns the errors as text, with the test's namespace written NS.
func errorTexts(errs []*Error, ns string) []string {
	var out []string
	for _, err := range errs {
		out = append(out, strings.ReplaceAll(err.Error(), ns, "NS"))
	}
	return out
}

// skippedTexts are the skips as text, with the test's namespace ns (unless
// "") written NS.
func skippedTexts(skipped []Skip, ns string) []string {
	var out []string
	for _, s := range skipped {
		text := s.String()
		if ns != "" {
			text = strings.ReplaceAll(text, ns, "NS")
		}
		out = append(out, text)
	}
	return out
}

// warningTexts are the warnings as "code object: message", with the test's
// namespace ns written NS.
func warningTexts(ws []report.Warning, ns string) []string {
	var out []string
	for _, w := range ws {
		out = append(out, strings.ReplaceAll(fmt.Sprintf("%s %s: %s", w.Code, w.Object, w.Message), ns, "NS"))
	}
	return out
}

// ignoreUnexported compares ignore rules by their configured fields.
var ignoreUnexported = cmpopts.IgnoreUnexported(classify.IgnoreRule{})

// diff is cmp.Diff with the options these tests need.
func diff(want, got any) string { return cmp.Diff(want, got, ignoreUnexported, cmpopts.EquateEmpty()) }

// gitRepo commits the folder fixtures/discover/repo to the main branch of a
// new bare repository, tags it v1.0.0, and returns its file:// URL and the
// commit.
func gitRepo(t *testing.T) (url, commit string) {
	t.Helper()
	dir, shas := gitrepo.Bare(t, "v1.0.0", gitrepo.Files(t, fixture("discover", "repo")))
	return "file://" + dir, shas[0]
}

// checkRules checks every rule a test imported: it validates, and it is a
// debt of one app, owned by someone, due on the chosen date.
func checkRules(t *testing.T, rules []classify.IgnoreRule) {
	t.Helper()
	for i, r := range rules {
		if err := r.Validate(); err != nil {
			t.Errorf("rule %d does not validate: %v", i, err)
		}
		// Every imported rule is one app's, or (argocd-cm's) one reconciler's.
		if r.Owner == "" || r.Expires != "2027-03-01" || r.App == "" && r.Tool == "" {
			t.Errorf("rule %d: owner %q, expires %q, app %q, tool %q", i, r.Owner, r.Expires, r.App, r.Tool)
		}
	}
}

func TestOptionsThatCannotWork(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Options)
		want   string
	}{
		{"an unknown reconciler", func(o *Options) { o.From = "fleet" }, `discover: from "fleet": want argocd or flux`},
		{"no review date for imported rules", func(o *Options) { o.IgnoreExpiry = time.Time{} }, "discover: IgnoreExpiry is required: imported ignore rules are debts with a review date"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := DefaultOptions()
			tt.mutate(&opts)
			// No request is sent: a nil client proves it.
			_, err := Discover(t.Context(), nil, opts)
			if err == nil || err.Error() != tt.want {
				t.Errorf("error = %v, want %s", err, tt.want)
			}
		})
	}
}

func TestAKindTheClusterDoesNotServeIsNamed(t *testing.T) {
	env.Need(t)
	d := &discovery{client: env.Dynamic, opts: Options{PageSize: 10}}
	gvr := schema.GroupVersionResource{Group: "nothing.example.com", Version: "v1", Resource: "widgets"}
	_, err := d.list(t.Context(), gvr, "", "")
	if !errors.Is(err, errNotServed) {
		t.Fatalf("listing a kind the cluster does not serve: %v, want errNotServed", err)
	}
	if want := "list widgets.nothing.example.com/v1 in every namespace: the cluster does not serve this API (is its CRD installed?)"; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error = %q, want it to start with %q", err, want)
	}
}
