package doctor

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/gitrepo"
	"github.com/google/go-cmp/cmp"
)

func TestAppResourcesAreTheKindsEachAppDeclaresByNamespace(t *testing.T) {
	env.Need(t)
	abs := func(p string) string {
		dir, err := filepath.Abs(filepath.Join("..", "fixtures", "apps", p))
		if err != nil {
			t.Fatal(err)
		}
		return dir
	}
	cfg := &config.Config{Apps: []config.App{
		{Name: "web", Namespace: "shop", Source: config.Source{Path: abs("web")}},
		{Name: "web-copy", Namespace: "shop", Source: config.Source{Path: abs("web")}},
		{Name: "gadgets", Source: config.Source{Path: abs("needs-crd")}},
		{Name: "gone", Source: config.Source{Path: abs("does-not-exist")}},
	}}
	opts := DefaultAppOptions()
	opts.Mapper = env.Mapper
	got, err := AppResources(t.Context(), cfg, opts)

	both := []string{"web", "web-copy"}
	want := []Resource{
		{Resource: "configmaps", Namespace: "default", Kind: "ConfigMap", Apps: []string{"gadgets"}},
		{Resource: "configmaps", Namespace: "shop", Kind: "ConfigMap", Apps: both},
		{Group: "apps", Resource: "deployments", Namespace: "shop", Kind: "Deployment", Apps: both},
		{Resource: "secrets", Namespace: "shop", Kind: "Secret", Apps: both},
		{Resource: "services", Namespace: "shop", Kind: "Service", Apps: both},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	for _, w := range []string{
		"app gadgets: Gadget not-installed: kind Gadget.gadgets.example.com is not served by the cluster (is its CRD installed?)",
		"app gone: source folder: stat ",
	} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v, want it to contain %q", err, w)
		}
	}
}

func TestAppResourcesKeepTheScansGitSizeLimit(t *testing.T) {
	env.Need(t)
	dir, _ := filepath.Abs(filepath.Join("..", "fixtures", "apps", "web"))
	files := map[string]string{}
	for name, content := range gitrepo.Files(t, dir) {
		files["apps/web/"+name] = content
	}
	repo, _ := gitrepo.Bare(t, "", files)
	cfg := &config.Config{Apps: []config.App{{Name: "web", Namespace: "shop", Source: config.Source{Repo: "file://" + repo, Path: "apps/web"}}}}
	opts := DefaultAppOptions()
	opts.Mapper, opts.GitCacheDir, opts.GitMaxBytes = env.Mapper, t.TempDir(), 64
	if _, err := AppResources(t.Context(), cfg, opts); err == nil || !strings.Contains(err.Error(), "--git-max-size") {
		t.Errorf("a source over --git-max-size: err = %v, want it refused as the scan refuses it", err)
	}
	opts.GitMaxBytes = 0
	if got, err := AppResources(t.Context(), cfg, opts); err != nil || len(got) == 0 {
		t.Errorf("without a limit: %v, %v", got, err)
	}
}

func TestDeclaresSaysWhichAppsNeedAResource(t *testing.T) {
	cases := []struct {
		name string
		r    Resource
		want string
	}{
		{"one app", Resource{Resource: "secrets", Namespace: "shop", Kind: "Secret", Apps: []string{"web"}}, "the app web declares a Secret there"},
		{"a kind with a vowel", Resource{Group: "networking.k8s.io", Resource: "ingresses", Namespace: "shop", Kind: "Ingress", Apps: []string{"web"}}, "the app web declares an Ingress there"},
		{"several apps", Resource{Resource: "secrets", Namespace: "shop", Kind: "Secret", Apps: []string{"api", "web"}}, "the apps api, web declare Secret objects there"},
		{"a cluster-scoped kind", Resource{Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Kind: "ClusterRole", Apps: []string{"web"}}, "the app web declares a ClusterRole"},
		{"no apps", Resource{Group: "apps", Resource: "deployments", Namespace: "shop"}, "the scan compares objects of deployments.apps there with Git"},
		{"a reason given", Resource{Resource: "secrets", Why: "named by --resources"}, "named by --resources"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := declares(c.r); got != c.want {
				t.Errorf("declares = %q, want %q", got, c.want)
			}
		})
	}
}
