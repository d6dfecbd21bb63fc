package scanner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gobwas/glob"
	"github.com/google/go-cmp/cmp"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/report"
)

// An object of a kind Argo CD excludes (config.App.ExcludedKinds, from
// argocd-cm) is dropped from the app's Git as Argo CD drops it: not
// compared, so not Missing when Argo CD never created it, and a
// NotApplied warning says why. Argo CD neither tracks nor prunes such a
// kind, so a live object of it with the app's tracking label is not the
// app's extra object, where another app (not of Argo CD) declaring the
// kind has the scan list it.
func TestKindsArgoCDExcludesAreNotCompared(t *testing.T) {
	ns := env.Namespace(t, nil)
	web, other := t.TempDir(), t.TempDir()
	for dir, files := range map[string]map[string]string{
		web: {
			"cfg.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {level: info}\n",
			"db.yaml":  "apiVersion: v1\nkind: Endpoints\nmetadata: {name: db}\nsubsets:\n- addresses: [{ip: 10.20.30.40}]\n  ports: [{port: 5432}]\n",
		},
		other: {
			"cache.yaml": "apiVersion: v1\nkind: Endpoints\nmetadata: {name: cache}\nsubsets:\n- addresses: [{ip: 10.20.30.41}]\n  ports: [{port: 6379}]\n",
		},
	} {
		for name, text := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	env.Apply(t, "argocd-controller", ns, cluster.Object(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg"},"data":{"level":"info"}}`))
	env.Apply(t, "argocd-controller", ns, cluster.Object(t, `{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"cache"},"subsets":[{"addresses":[{"ip":"10.20.30.41"}],"ports":[{"port":6379}]}]}`))
	for _, name := range []string{"stray", "left-behind"} {
		kind := map[string]string{"stray": "Endpoints", "left-behind": "ConfigMap"}[name]
		env.Create(t, "kubectl-create", ns, cluster.Object(t, `{"apiVersion":"v1","kind":"`+kind+`","metadata":{"name":"`+name+`","labels":{"argocd.argoproj.io/instance":"web"}}}`))
	}

	excluded := &config.KindFilter{Exclusions: []config.FilteredKinds{{
		APIGroups: []glob.Glob{glob.MustCompile(""), glob.MustCompile("discovery.k8s.io")}, Kinds: []string{"Endpoints", "EndpointSlice"},
		Why: "argocd-cm's resource.exclusions excludes it",
	}}}
	r := runScan(t, scanConfig(ns,
		config.App{Name: "web", Source: config.Source{Path: web}, ExcludedKinds: excluded},
		config.App{Name: "other", Source: config.Source{Path: other}},
	), func(o *Options) { o.Extra = true })
	want := map[string]report.Status{"ConfigMap/cfg": report.StatusInSync, "ConfigMap/left-behind": report.StatusExtra, "Endpoints/cache": report.StatusInSync}
	if d := cmp.Diff(want, statuses(r)); d != "" {
		t.Errorf("statuses (-want +got):\n%s", d)
	}
	var warned []string
	for _, w := range r.Warnings {
		if w.Code == report.WarnNotApplied {
			warned = append(warned, w.App+" "+strings.ReplaceAll(w.Message, ns, "NS"))
		}
	}
	if len(warned) != 1 || !strings.HasPrefix(warned[0], "web Endpoints/NS/db (db.yaml line 1) is of a kind Argo CD never applies (argocd-cm's resource.exclusions excludes it)") {
		t.Errorf("NotApplied warnings %q: want one for web's Endpoints/db naming argocd-cm", warned)
	}
}
