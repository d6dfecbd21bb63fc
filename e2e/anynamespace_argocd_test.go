package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/reconcilers"
	"github.com/calricon/driftscan/report"
)

// createNamespace creates namespace name and deletes it when the test
// ends.
func createNamespace(t *testing.T, name string) {
	t.Helper()
	if err := env.CreateNamespace(t.Context(), name, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// createProject creates an AppProject in Argo CD's namespace that allows
// any repository and destination to Applications in its own namespace and
// in sourceNamespaces.
func createProject(t *testing.T, name string, sourceNamespaces ...string) {
	t.Helper()
	createProjectIn(t, argo.Namespace, name, sourceNamespaces...)
}

// createProjectIn is createProject for the Argo CD of namespace argoNS.
func createProjectIn(t *testing.T, argoNS, name string, sourceNamespaces ...string) {
	t.Helper()
	createProjectOf(t, argoNS, name, []string{"*"}, sourceNamespaces)
}

// createProjectOf is createProjectIn with the project's sourceRepos (Argo
// CD's globs; "!" denies).
func createProjectOf(t *testing.T, argoNS, name string, sourceRepos, sourceNamespaces []string) {
	t.Helper()
	asAny := func(ss []string) []any {
		out := make([]any, 0, len(ss))
		for _, s := range ss {
			out = append(out, s)
		}
		return out
	}
	createProjectSpec(t, argoNS, name, map[string]any{
		"sourceRepos":      asAny(sourceRepos),
		"destinations":     []any{map[string]any{"server": "*", "namespace": "*"}},
		"sourceNamespaces": asAny(sourceNamespaces),
	})
}

// createProjectSpec creates the AppProject argoNS/name of spec, and deletes
// it when the test ends.
func createProjectSpec(t *testing.T, argoNS, name string, spec map[string]any) {
	t.Helper()
	project := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
		"metadata": map[string]any{"name": name, "namespace": argoNS},
		"spec":     spec,
	}}
	if _, err := env.Dynamic.Resource(reconcilers.AppProject).Namespace(argoNS).Create(t.Context(), project, metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
		t.Fatalf("create AppProject %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = env.Dynamic.Resource(reconcilers.AppProject).Namespace(argoNS).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// Argo CD reconciles an Application outside its own namespace (apps in
// any namespace) only in a namespace argocd-cmd-params-cm's
// application.namespaces enables (here team-*), and only when the
// Application's AppProject lists that namespace in sourceNamespaces; it
// tracks what such an Application applies as <namespace>_<name>, so an
// Application of the same name in Argo CD's own namespace is another app.
// `driftscan scan --from argocd --all-namespaces` must see the same: each
// app's own objects and extra objects, a takeover between the two as a
// fight, and none of the Applications Argo CD does not reconcile.
func TestArgoCDApplicationsInAnyNamespace(t *testing.T) {
	needArgo(t)
	dest := env.Namespace(t, nil)
	suffix := dest[strings.LastIndex(dest, "-")+1:]
	team, off := "team-any-"+suffix, "other-any-"+suffix
	createNamespace(t, team)
	createNamespace(t, off)
	project := "team-any-" + suffix
	createProject(t, project, team)
	name := "web-any-" + suffix
	labels := "{test: any-" + suffix + "}"
	own := gitServer.NewRepo(t, configMaps("cfg-own", "cfg-left"))
	teams := gitServer.NewRepo(t, configMaps("cfg-team"))
	createArgoApp(t, argoApp{Name: name, Namespace: dest, Repo: own, Path: "app", Labels: labels})
	createArgoApp(t, argoApp{Name: name, Namespace: dest, Repo: teams, Path: "app", AppNamespace: team, Project: project, Labels: labels})
	// The default project lists no sourceNamespaces.
	createArgoApp(t, argoApp{Name: name + "-refused", Namespace: dest, Repo: teams, Path: "app", AppNamespace: team, Labels: labels})
	// A namespace application.namespaces does not enable.
	createArgoApp(t, argoApp{Name: name, Namespace: dest, Repo: teams, Path: "app", AppNamespace: off, Project: project, Labels: labels})
	syncArgoApp(t, name)
	waitArgoSynced(t, name, own.Head())
	syncArgoAppIn(t, team, name, false)
	waitArgoSyncedIn(t, argo, team, name, teams.Head())
	for cm, app := range map[string]string{"cfg-own": name, "cfg-left": name, "cfg-team": team + "_" + name} {
		if id := env.Get(t, cluster.ConfigMap, dest, cm).GetAnnotations()["argocd.argoproj.io/tracking-id"]; !strings.HasPrefix(id, app+":") {
			t.Fatalf("%s's tracking id is %q: the test expects Argo CD to track it for %s", cm, id, app)
		}
	}
	refusal := waitArgoCondition(t, team, name+"-refused", "not permitted to use project")
	if refusal == "" {
		t.Fatalf("Argo CD did not refuse %s/%s-refused, whose project does not list its namespace", team, name)
	}
	if status, ok := getArgoAppIn(t, off, name).Object["status"]; ok {
		t.Fatalf("Argo CD reconciled %s/%s, in a namespace application.namespaces does not enable: status %v", off, name, status)
	}

	// Git drops cfg-left from the app in Argo CD's namespace (it does not
	// prune) and takes cfg-team from the team's app.
	head := own.Commit(t, "drop cfg-left, take cfg-team", configMaps("cfg-own", "cfg-team"))
	refreshArgoApp(t, name)
	syncArgoApp(t, name)
	if prune := argoRequiresPruning(t, name, head, "ConfigMap/cfg-left"); !slices.Equal(prune, []string{"ConfigMap/cfg-left"}) {
		t.Fatalf("Argo CD would prune %v of %s; the test expects ConfigMap/cfg-left", prune, name)
	}
	if id := env.Get(t, cluster.ConfigMap, dest, "cfg-team").GetAnnotations()["argocd.argoproj.io/tracking-id"]; !strings.HasPrefix(id, name+":") {
		t.Fatalf("cfg-team's tracking id is %q after the sync: the test expects %s's", id, name)
	}
	if got := argoSyncAfterRefreshIn(t, team, name); got != "OutOfSync" {
		t.Fatalf("Argo CD says %s/%s is %s with cfg-team taken; the test expects OutOfSync", team, name, got)
	}

	// The refused Application is an app error: exit 2.
	r := scanExiting(t, 2, "--from", "argocd", "--all-namespaces", "-l", "test=any-"+suffix, "--extra")
	ownApp, teamApp := argo.Namespace+"/"+name, team+"/"+name
	var apps []string
	for _, a := range r.Apps {
		apps = append(apps, a.Name)
	}
	slices.Sort(apps)
	want := []string{ownApp, name + "-refused", teamApp}
	slices.Sort(want)
	if !slices.Equal(apps, want) {
		t.Errorf("apps %v, want %v: Argo CD does not reconcile %s/%s", apps, want, off, name)
	}
	for _, a := range r.Apps {
		var extra []string
		for _, o := range a.Objects {
			if o.Status == report.StatusExtra {
				extra = append(extra, o.Kind+"/"+o.Name)
			}
		}
		switch a.Name {
		case ownApp:
			if !slices.Equal(extra, []string{"ConfigMap/cfg-left"}) {
				t.Errorf("%s's extra objects are %v, want what Argo CD would prune: [ConfigMap/cfg-left]", a.Name, extra)
			}
		case teamApp:
			if len(extra) > 0 {
				t.Errorf("%s's extra objects are %v, want none: cfg-left is %s's", a.Name, extra, ownApp)
			}
		default:
			if !strings.Contains(a.Error, "sourceNamespaces") {
				t.Errorf("%s: error %q, want the refusal Argo CD gives (%s)", a.Name, a.Error, refusal)
			}
		}
	}

	// Both apps declare cfg-team: an error of the scan of both. The scan of
	// the team's app alone says who took it.
	got := activeFindings(scan(t, "--from", "argocd", "--all-namespaces", "-l", "test=any-"+suffix, "--app", teamApp))
	if len(got) != 1 || got[0].Object != "ConfigMap/cfg-team" || !strings.Contains(got[0].Path, "tracking-id") || !strings.Contains(got[0].Hint, "fight") {
		t.Errorf("want one finding: %s took cfg-team from %s, got:\n%s", ownApp, teamApp, describe(got))
	}
}

// breakglass on an Application in a team namespace (-n), deployed by an app
// of apps in Argo CD's namespace: the parent's tracking names it without
// a namespace, so it is in Argo CD's namespace (--argocd-namespace), and
// its self-heal would undo the child's pause. Once both are suspended,
// status and resume scan the child's source, which discovery finds with
// Argo CD's AppProjects, not in the team namespace.
func TestBreakglassInAnyNamespace(t *testing.T) {
	needArgo(t)
	t.Parallel()
	ns := env.Namespace(t, nil)
	suffix := ns[strings.LastIndex(ns, "-")+1:]
	team := "team-bg-" + suffix
	createNamespace(t, team)
	createProject(t, team, team)
	parent, child := "bg-parent-"+suffix, "bg-child-"+suffix
	createAppOfAppsIn(t, ns, parent, child, team, team)

	checkSuspendRefusedIn(t, parent, child, team)
	for _, args := range [][]string{{parent}, {child, "-n", team}} {
		if res := runDriftscan(t, append([]string{"breakglass", "suspend", "--reason", "INC-10 hotfix", "--ttl", "1h"}, args...)...); res.Code != 0 {
			t.Fatalf("suspend %v: exit %d\n%s%s", args, res.Code, res.Stdout, res.Stderr)
		} else if len(args) > 1 && !strings.Contains(res.Stdout, "breakglass resume "+child+" -n "+team) {
			t.Errorf("suspend %v does not say how to resume it:\n%s", args, res.Stdout)
		}
	}
	humanEdit(t, ns, "debug")
	holds(t, ns, "debug", holdFor)

	res := runDriftscan(t, "breakglass", "status", "-A")
	var line string
	for l := range strings.SplitSeq(res.Stdout, "\n") {
		if strings.HasPrefix(l, "Application/"+team+"/"+child+" ") {
			line = l
		}
	}
	if !strings.Contains(line, "LOG_LEVEL") || strings.Contains(line, "unknown:") {
		t.Errorf("status -A: want the child with the human's LOG_LEVEL as the drift it protects:\n%s%s", res.Stdout, res.Stderr)
	}
	res = runDriftscan(t, "breakglass", "resume", child, "-n", team)
	if res.Code == 0 || !strings.Contains(res.Stdout+res.Stderr, "LOG_LEVEL") {
		t.Errorf("resume of the child: exit %d, want a refusal over the human's LOG_LEVEL, which Git does not have:\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
}
