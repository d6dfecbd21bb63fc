package backport

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/golden"
)

func TestPlainYAMLIsEditedInPlace(t *testing.T) {
	app, root := plainApp(t)
	ns := app.Namespace
	// A pipeline sets the image and adds an env var; humans annotate, drop
	// an env var, edit the ConfigMap and rotate the database password; the
	// HPA scales.
	env.Patch(t, "kubectl-set", cluster.Deployment, ns, "web", types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.26","env":[{"name":"FEATURE_X","value":"1"}]}]}}}}`)
	env.Patch(t, "kubectl-annotate", cluster.Deployment, ns, "web", types.MergePatchType,
		`{"metadata":{"annotations":{"example.com/hotfix":"INC-4211"}}}`)
	env.Patch(t, "kubectl-patch", cluster.Deployment, ns, "web", types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"app","env":[{"name":"LEGACY_MODE","$patch":"delete"}]}]}}}}`)
	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "web-config", types.MergePatchType, `{"data":{"LOG_LEVEL":"debug"}}`)
	live := base64.StdEncoding.EncodeToString([]byte("live-password-do-not-leak"))
	env.Patch(t, "kubectl-edit", cluster.Secret, ns, "web-db", types.MergePatchType, `{"data":{"password":"`+live+`"}}`)
	env.Scale(t, "kube-controller-manager", cluster.Deployment, ns, "web", 5)
	scanned := scanApp(t, app)

	// The pilot's own name signs the commit, from the repository's config.
	r, _ := git.PlainOpen(root)
	cfg, _ := r.Config()
	cfg.User.Name, cfg.User.Email = "Pat Oncall", "pat@example.com"
	if err := r.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}

	res, err := Run(t.Context(), scanned, options(root, app, "INC-4211 payment certs"))
	if err != nil {
		t.Fatal(err)
	}
	wantChanges := []string{
		`ConfigMap/web-config .data.LOG_LEVEL`,
		`Deployment/web .metadata.annotations.example.com/hotfix`,
		`Deployment/web .spec.template.spec.containers[name="app"].env[name="FEATURE_X"]`,
		`Deployment/web .spec.template.spec.containers[name="app"].env[name="LEGACY_MODE"]`,
		`Deployment/web .spec.template.spec.containers[name="app"].image`,
	}
	if diff := cmp.Diff(wantChanges, fields(res.Changes, ns)); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	for _, c := range res.Changes {
		if c.Via != "manifest" || !strings.HasPrefix(c.WrittenTo, "apps/web/") {
			t.Errorf("%s written to %s via %s", c.Field(), c.WrittenTo, c.Via)
		}
	}
	if diff := cmp.Diff([]string{"Secret/web-db .data.password"}, fields(res.Skipped, ns)); diff != "" {
		t.Fatalf("skipped (-want +got):\n%s", diff)
	}
	if !strings.Contains(res.Skipped[0].Reason, "Secret data is masked") || !res.Remaining() {
		t.Errorf("the Secret is skipped because %q", res.Skipped[0].Reason)
	}
	if res.Branch != "hotfix/web-20260304T050607Z" {
		t.Errorf("branch %s", res.Branch)
	}
	c := committed(t, root, res, "apps/web/config.yaml", "apps/web/deployment.yaml")
	if c.Author.Name != "Pat Oncall" || c.Author.Email != "pat@example.com" {
		t.Errorf("author %s", c.Author)
	}
	for _, want := range []string{
		"backport web: carry 5 live changes back to Git\n",
		"Reason: INC-4211 payment certs\n",
		"- Deployment/" + ns + "/web .spec.template.spec.containers[name=\"app\"].image\n  Changed: nginx:1.25 -> nginx:1.26\n  by kubectl-set (pipeline)",
		"- ConfigMap/" + ns + "/web-config .data.LOG_LEVEL\n  Changed: info -> debug\n  by kubectl-edit (human)",
		"env[name=\"LEGACY_MODE\"]\n  Removed: {\"name\":\"LEGACY_MODE\",\"value\":\"true\"} -> (absent)\n  by kubectl-",
		"Not carried back:\n- Secret/" + ns + "/web-db .data.password, by kubectl-edit (human): Secret data is masked",
	} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("the commit message lacks %q:\n%s", want, c.Message)
		}
	}

	// Comments, blank lines, order, quoting and the other documents stay.
	golden.Check(t, "plain-deployment.yaml", readFile(t, filepath.Join(app.Source.Path, "deployment.yaml")))
	golden.Check(t, "plain-config.yaml", readFile(t, filepath.Join(app.Source.Path, "config.yaml")))
	if got, want := readFile(t, filepath.Join(app.Source.Path, "secret.yaml")), readFile(t, "../fixtures/backport/plain/secret.yaml"); string(got) != string(want) {
		t.Errorf("secret.yaml changed:\n%s", got)
	}
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if data := readFile(t, p); strings.Contains(string(data), "live-password") || strings.Contains(string(data), live) {
			t.Errorf("%s holds the live secret", p)
		}
		return nil
	})

	// Scanning the new commit: what was carried back is no longer drift;
	// the Secret still is, and the HPA's replicas are left to the HPA.
	after := scanApp(t, app)
	if diff := cmp.Diff([]string{"Secret/web-db .data.password"}, unbackported(after)); diff != "" {
		t.Errorf("pipeline and human drift after the backport (-want +got):\n%s", diff)
	}
	if !strings.Contains(string(readFile(t, filepath.Join(app.Source.Path, "deployment.yaml"))), "replicas: 3") {
		t.Error("the operator's replicas were written to Git")
	}
}

// TestMapKeysWithDotsAndTypedValuesAreWrittenAsTheClusterHasThem: a custom
// resource's free-form map, whose keys hold dots, '/' and '~', gets a
// changed key, a new one, a number and a string of digits, each written as
// one key with the live value's own type.
func TestMapKeysWithDotsAndTypedValuesAreWrittenAsTheClusterHasThem(t *testing.T) {
	env.InstallCRDs(t, "argocd-controller", "../fixtures/render/helm/web/crds")
	src := t.TempDir()
	manifest := "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: web\nspec:\n  config:\n    log.level: info   # for now\n"
	if err := os.WriteFile(filepath.Join(src, "widget.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t, nil)
	root := worktree(t, src, "apps/widget")
	app := config.App{Name: "widget", Namespace: ns, Source: config.Source{Path: filepath.Join(root, "apps", "widget")}}
	sync(t, app)
	widget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	env.Patch(t, "kubectl-edit", widget, ns, "web", types.MergePatchType,
		`{"spec":{"config":{"log.level":"debug","feature.example.com/x~y":"on","max.conns":10,"listen.port":"8080"}}}`)
	res, err := Run(t.Context(), scanApp(t, app), options(root, app, "INC-7"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Skipped) != 0 || len(res.Changes) != 4 {
		t.Fatalf("changes %v, skipped %+v", fields(res.Changes, ns), res.Skipped)
	}
	want := "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: web\nspec:\n  config:\n    log.level: debug  # for now\n" +
		"    feature.example.com/x~y: \"on\"\n    listen.port: \"8080\"\n    max.conns: 10\n"
	if diff := cmp.Diff(want, string(readFile(t, filepath.Join(app.Source.Path, "widget.yaml")))); diff != "" {
		t.Errorf("widget.yaml (-want +got):\n%s", diff)
	}
	if after := scanApp(t, app); len(unbackported(after)) != 0 {
		t.Errorf("drift left after the backport: %v", unbackported(after))
	}
}
