package scanner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/report"
)

// The namespace metadata an Argo CD app manages (config.App.
// ArgoManagedNamespace) is compared as the Namespace Argo CD applies with
// server-side apply; a person's removal of a label is a finding whose hint
// says Argo CD never compares it (seen with the real Argo CD, e2e
// TestArgoCDManagedNamespaceMetadata). An app whose own manifests declare
// its namespace compares those instead, as Argo CD then leaves the
// metadata out.
func TestArgoManagedNamespaceMetadataIsCompared(t *testing.T) {
	ns, declared := env.Namespace(t, nil), env.Namespace(t, nil)
	web, own := t.TempDir(), t.TempDir()
	write := func(dir, text string) {
		if err := os.WriteFile(filepath.Join(dir, "objects.yaml"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(web, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {k: v}\n")
	write(own, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+declared+"\n  labels: {team: own}\n")
	const enforce = "pod-security.kubernetes.io/enforce"
	for _, n := range []string{ns, declared} {
		env.Apply(t, "argocd-controller", "", cluster.Object(t, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"`+n+`","labels":{"`+enforce+`":"restricted","team":"own"},"annotations":{"owner":"shop","argocd.argoproj.io/sync-options":"ServerSideApply=true"}},"spec":{}}`))
	}
	env.Apply(t, "argocd-controller", ns, cluster.Object(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web"},"data":{"k":"v"}}`))
	managed := func(name string) *config.NamespaceMetadata {
		return &config.NamespaceMetadata{Labels: map[string]string{enforce: "restricted", "team": "own"},
			Annotations: map[string]string{"owner": "shop", "argocd.argoproj.io/sync-options": "ServerSideApply=true"},
			Where:       "Application/argocd/" + name + " spec.syncPolicy.managedNamespaceMetadata"}
	}
	cfg := scanConfig(ns,
		config.App{Name: "web", Source: config.Source{Path: web}, ArgoManagedNamespace: managed("web"),
			GitOps: &report.GitOps{Tool: "argocd", Object: "Application/argocd/web", SelfHeal: true}},
		config.App{Name: "own", Namespace: declared, Source: config.Source{Path: own}, ArgoManagedNamespace: managed("own"),
			GitOps: &report.GitOps{Tool: "argocd", Object: "Application/argocd/own", SelfHeal: true}},
	)
	r := runScan(t, cfg)
	want := map[string]report.Status{"ConfigMap/web": report.StatusInSync, "Namespace/" + ns: report.StatusInSync, "Namespace/" + declared: report.StatusDrifted}
	if d := cmp.Diff(want, statuses(r)); d != "" {
		t.Errorf("statuses (-want +got):\n%s", d)
	}
	for _, a := range r.Apps {
		for _, o := range a.Objects {
			if o.Kind == "Namespace" && o.Name == ns && o.File != "Application/argocd/web spec.syncPolicy.managedNamespaceMetadata" {
				t.Errorf("the managed namespace's file is %q, want the Application's field", o.File)
			}
		}
	}

	env.Patch(t, "kubectl-label", cluster.Namespace, "", ns, types.MergePatchType, `{"metadata":{"labels":{"`+enforce+`":null}}}`)
	r = runScan(t, cfg)
	var got []report.Finding
	for _, a := range r.Apps {
		for _, o := range a.Objects {
			if a.Name == "web" {
				got = append(got, o.Findings...)
			}
		}
	}
	if len(got) != 1 || got[0].Path != ".metadata.labels."+enforce || got[0].Type != report.TypeRemoved ||
		!strings.Contains(got[0].Hint, "never compares it") || strings.Contains(got[0].Hint, "self-heal is on") {
		t.Errorf("want the label's removal, with the hint that Argo CD never compares it, got %+v", got)
	}
}
