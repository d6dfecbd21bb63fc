package scanner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/chartrepo"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/report"
)

// A chart that looks the cluster up, installed by the real helm (whose
// install renders against the cluster): with the applier's lookup the
// scan renders what helm did and is clean; rendered as helm template
// renders (no lookup) the same install is drift. A finding on a value the
// chart took from a Secret is masked, as one on a HelmRelease's values
// from a Secret is. Where the scan's identity may not
// read what the chart looks up, the app gets a warning.
func TestAChartsLookupReadsTheClusterAsItsApplierDid(t *testing.T) {
	env.Need(t)
	ns := env.Namespace(t, nil)
	for _, obj := range chartrepo.LookupObjects() {
		env.Create(t, "kubectl-create", ns, obj)
	}
	dir := t.TempDir()
	for name, text := range chartrepo.Lookup().Files {
		p := filepath.Join(dir, "client", filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	chartrepo.RunHelm(t, dir, "install", "client", "./client", "--namespace", ns, "--kubeconfig", env.Kubeconfig, "--wait=false")
	live, _, _ := unstructured.NestedStringMap(env.Get(t, cluster.ConfigMap, ns, "client").Object, "data")
	if want := map[string]string{"user": "alice-db-user", "seeded": "yes"}; !cmp.Equal(live, want) {
		t.Fatalf("the real helm install rendered %v, want %v (its lookups read the cluster)", live, want)
	}

	app := func(lookup bool) config.App {
		return config.App{Name: "client", Source: config.Source{Path: "client",
			Helm: &config.HelmSource{ReleaseName: "client", Lookup: lookup}}, Appliers: []string{"helm"}}
	}
	scan := func(lookup bool, mutate ...func(*Options)) *report.Report {
		cfg := scanConfig(ns, app(lookup))
		cfg.Dir = dir
		return runScan(t, cfg, mutate...)
	}
	r := scan(true)
	if got := rows(r); len(got) != 0 || r.Summary.Errors != 0 || len(r.Warnings) != 0 {
		t.Fatalf("with helm's lookup: findings %s, summary %+v, warnings %+v", dump(got), r.Summary, r.Warnings)
	}
	// The control: as helm template renders, the same install differs.
	if got := rows(scan(false)); len(got) != 2 {
		t.Errorf("without lookup the chart renders its defaults, want user and seeded to differ; got %s", dump(got))
	}

	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "client", "application/merge-patch+json", `{"data":{"user":"mallory"}}`)
	r = scan(true)
	want := []row{{Object: "ConfigMap/client", Path: ".data.user", Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl-edit", Git: "***", Live: "*** (differs)"}}
	if diff := cmp.Diff(want, rows(r)); diff != "" {
		t.Errorf("after a person's edit (-want +got; the user the chart read from a Secret masked):\n%s", diff)
	}
	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "client", "application/merge-patch+json", `{"data":{"user":"alice-db-user"}}`)

	t.Run("an identity that may not read Secrets", func(t *testing.T) {
		cfg := user(t, "nosecrets-"+ns, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps", "namespaces"}, Verbs: []string{"get", "list"}},
			rbacv1.PolicyRule{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"mutatingwebhookconfigurations"}, Verbs: []string{"list"}},
			rbacv1.PolicyRule{APIGroups: []string{"autoscaling"}, Resources: []string{"horizontalpodautoscalers"}, Verbs: []string{"list"}})
		r := scan(true, func(o *Options) { o.RESTConfig = cfg })
		if diff := cmp.Diff([]string{"client/LookupUnread"}, codes(r)); diff != "" {
			t.Fatalf("warnings (-want +got):\n%s\n%+v", diff, r.Warnings)
		}
		if m := r.Warnings[0].Message; !strings.Contains(m, `lookup "v1" "Secret" "`+ns+`" "db"`) || !strings.Contains(m, "forbidden") {
			t.Errorf("the warning does not name the lookup and why: %q", m)
		}
		if got := rows(r); len(got) != 1 || got[0].Path != ".data.user" || got[0].Git != "nobody" {
			t.Errorf("want the user the chart could not look up as the one finding; got %s", dump(got))
		}
	})

	t.Run("a namespaced kind looked up by name without a namespace, as the real helm upgrade gets it", func(t *testing.T) {
		tmpl := filepath.Join(dir, "client", "templates", "probe.yaml")
		if err := os.WriteFile(tmpl, []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: probe
data:
  found: {{ if (lookup "v1" "Secret" "" "db") }}"yes"{{ else }}"no"{{ end }}
`), 0o644); err != nil {
			t.Fatal(err)
		}
		chartrepo.RunHelm(t, dir, "upgrade", "client", "./client", "--namespace", ns, "--kubeconfig", env.Kubeconfig, "--wait=false")
		if found, _, _ := unstructured.NestedString(env.Get(t, cluster.ConfigMap, ns, "probe").Object, "data", "found"); found != "no" {
			t.Fatalf("the real helm upgrade found the Secret looked up without a namespace (%q): the test expects it not to", found)
		}
		r := scan(true)
		if got := rows(r); len(got) != 0 || len(r.Warnings) != 0 {
			t.Errorf("want the scan clean without a warning, as helm found nothing: findings %s, warnings %+v", dump(got), r.Warnings)
		}
		if err := os.Remove(tmpl); err != nil {
			t.Fatal(err)
		}
		chartrepo.RunHelm(t, dir, "upgrade", "client", "./client", "--namespace", ns, "--kubeconfig", env.Kubeconfig, "--wait=false")
	})

	t.Run("a lookup in another namespace is not sent", func(t *testing.T) {
		other := env.Namespace(t, nil)
		env.Create(t, "kubectl-create", other, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "db"},
			"stringData": map[string]any{"user": "another-tenants-user"},
		}})
		tmpl := filepath.Join(dir, "client", "templates", "other.yaml")
		if err := os.WriteFile(tmpl, []byte(`{{- $db := lookup "v1" "Secret" "`+other+`" "db" }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: other
data:
  user: {{ if $db }}{{ index $db.data "user" | b64dec | quote }}{{ else }}"nobody"{{ end }}
`), 0o644); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(tmpl)
		env.Create(t, "helm", ns, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "other"}, "data": map[string]any{"user": "nobody"},
		}})
		r := scan(true)
		if diff := cmp.Diff([]string{"client/LookupUnread"}, codes(r)); diff != "" {
			t.Fatalf("warnings (-want +got):\n%s\n%+v", diff, r.Warnings)
		}
		if m := r.Warnings[0].Message; !strings.Contains(m, `lookup "v1" "Secret" "`+other+`" "db" was not sent`) || !strings.Contains(m, "namespace "+ns) {
			t.Errorf("the warning does not name the lookup and the release's namespace: %q", m)
		}
		if got := rows(r); len(got) != 0 {
			t.Errorf("the chart rendered what it read in another namespace: %s", dump(got))
		}
	})
}
