package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/reconcilers"
	"github.com/calricon/driftscan/report"
)

// installationKey is the annotation in which Argo CD writes argocd-cm's
// installationID on what it applies, next to its tracking id.
const installationKey = "argocd.argoproj.io/installation-id"

// startSecondArgoCD starts another Argo CD v3.5.7 on the test's control
// plane, in namespace ns, with argocd-cm's installationID id, and stops it
// when the test ends.
func startSecondArgoCD(t *testing.T, ns, id string, appNamespaces ...string) *reconcilers.ArgoCD {
	t.Helper()
	opts := reconcilers.DefaultArgoCDOptions()
	opts.Namespace, opts.Lifetime, opts.ApplicationNamespaces = ns, 15*time.Minute, appNamespaces
	a, err := reconcilers.StartArgoCD(t.Context(), env, opts)
	if err != nil {
		t.Fatalf("start a second Argo CD in %s: %v", ns, err)
	}
	t.Cleanup(a.Stop)
	if err := a.Set(t.Context(), "installationID", id); err != nil {
		t.Fatal(err)
	}
	return a
}

// configMaps is an app folder of ConfigMaps named names.
func configMaps(names ...string) map[string]string {
	var docs []string
	for _, n := range names {
		docs = append(docs, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "+n+"}\ndata: {k: v}\n")
	}
	return map[string]string{"app/cfg.yaml": strings.Join(docs, "---\n")}
}

// Two Argo CD installations on one cluster (a platform team's and an
// application team's) are told apart by argocd-cm's installationID: each
// writes its id in the argocd.argoproj.io/installation-id annotation next
// to its tracking id, and counts as its own only what carries its id
// (util/argo/resource_tracking.go, getAppInstanceValue). Both name an
// Application after the namespace it deploys to, so their tracking ids
// name the same app. driftscan, scanning one of them, must count only that
// one's objects: `--extra` lists none of the other's (a person who
// deleted what `--extra` lists would delete another team's app), and an
// object of this app the other installation took over (its id on it) is
// two apps fighting, as Argo CD itself sees it (OutOfSync).
func TestTwoArgoCDInstallations(t *testing.T) {
	needArgo(t)
	setArgoCM(t, "installationID", "east")
	west := startSecondArgoCD(t, "argocd-west", "west", "west-*")
	ns := env.Namespace(t, nil)
	name := ns // each team names its Application after the namespace
	eastRepo := gitServer.NewRepo(t, configMaps("cfg-east"))
	westRepo := gitServer.NewRepo(t, configMaps("cfg-west"))
	createArgoApp(t, argoApp{Name: name, Namespace: ns, Repo: eastRepo, Path: "app"})
	createArgoApp(t, argoApp{Name: name, Namespace: ns, Repo: westRepo, Path: "app", AppNamespace: west.Namespace})
	syncArgoApp(t, name)
	waitArgoSynced(t, name, eastRepo.Head())
	syncArgoAppIn(t, west.Namespace, name, false)
	waitArgoSyncedIn(t, west, west.Namespace, name, westRepo.Head())
	for cm, id := range map[string]string{"cfg-east": "east", "cfg-west": "west"} {
		a := env.Get(t, cluster.ConfigMap, ns, cm).GetAnnotations()
		if a[installationKey] != id || !strings.HasPrefix(a["argocd.argoproj.io/tracking-id"], name+":") {
			t.Fatalf("%s carries installation id %q and tracking id %q: the test expects %s's, naming app %s", cm, a[installationKey], a["argocd.argoproj.io/tracking-id"], id, name)
		}
	}

	// Argo CD east counts cfg-west as nobody's: not its resource, nothing
	// to prune.
	if got := argoSyncAfterRefresh(t, name); got != "Synced" {
		t.Fatalf("Argo CD east says %s; the test expects Synced", got)
	}
	if got := argoResources(t, argo.Namespace, name); !slices.Equal(got, []string{"ConfigMap/cfg-east"}) {
		t.Fatalf("Argo CD east's resources are %v; the test expects only ConfigMap/cfg-east", got)
	}
	r := scan(t, "--from", "argocd", "--app", name, "--extra")
	checkClean(t, r, 1)
	if got := extraObjects(r); len(got) > 0 {
		t.Errorf("driftscan's extra objects of east's %s are %v: they are Argo CD west's, which Argo CD east never prunes", name, got)
	}

	// West's Git takes cfg-east too, and west syncs last.
	head := westRepo.Commit(t, "take cfg-east", configMaps("cfg-west", "cfg-east"))
	syncArgoAppIn(t, west.Namespace, name, false)
	waitArgoSyncedIn(t, west, west.Namespace, name, head)
	if id := env.Get(t, cluster.ConfigMap, ns, "cfg-east").GetAnnotations()[installationKey]; id != "west" {
		t.Fatalf("cfg-east carries installation id %q after west's sync; the test expects west", id)
	}
	if got := argoSyncAfterRefresh(t, name); got != "OutOfSync" {
		t.Fatalf("Argo CD east says %s with cfg-east taken by west; the test expects OutOfSync", got)
	}
	got := activeFindings(scan(t, "--from", "argocd", "--app", name, "--extra"))
	if len(got) != 1 || got[0].Object != "ConfigMap/cfg-east" || got[0].Path != ".metadata.annotations."+installationKey ||
		got[0].Live != "west" || got[0].Class != report.ClassPipeline || !strings.Contains(got[0].Hint, "fight") {
		t.Errorf("want one finding: cfg-east's installation id, another Argo CD installation fighting over it, got:\n%s", describe(got))
	}

	// East syncs and takes it back.
	syncArgoApp(t, name)
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		cm, err := env.Client.CoreV1().ConfigMaps(ns).Get(ctx, "cfg-east", metav1.GetOptions{})
		return err == nil && cm.Annotations[installationKey] == "east", nil
	})
	if err != nil {
		t.Fatal("Argo CD east's sync did not take cfg-east back")
	}
	waitArgoSynced(t, name, eastRepo.Head())
	checkClean(t, scan(t, "--from", "argocd", "--app", name), 1)

	checkBreakglassOfAnotherInstallation(t, west)
}

// West's parent Application deploys a child Application into a namespace
// of its own apps in any namespace (west-*), with self-heal: the child's
// tracking id names the parent without a namespace and carries west's
// installation id. Pausing the child with Argo CD east's namespace (the
// default --argocd-namespace) would look for the parent in east's, where
// there is none, and pause a child west's parent restores within seconds:
// breakglass refuses, naming the installation; with west's namespace it
// finds the parent and refuses as for one installation.
func checkBreakglassOfAnotherInstallation(t *testing.T, west *reconcilers.ArgoCD) {
	t.Helper()
	ns := env.Namespace(t, nil)
	suffix := ns[strings.LastIndex(ns, "-")+1:]
	team := "west-bg-" + suffix
	createNamespace(t, team)
	createProjectIn(t, west.Namespace, team, team)
	parent, child := "bg-parent-"+suffix, "bg-child-"+suffix
	createAppOfAppsOf(t, west, ns, parent, child, team, team)
	if id := getArgoAppIn(t, team, child).GetAnnotations()[installationKey]; id != "west" {
		t.Fatalf("the child Application carries installation id %q; the test expects west's", id)
	}

	res := runDriftscan(t, "breakglass", "suspend", child, "-n", team, "--reason", "INC-11 hotfix", "--ttl", "1h")
	if res.Code == 0 || !strings.Contains(res.Stderr, "another Argo CD installation") || !strings.Contains(res.Stderr, `"west"`) || !strings.Contains(res.Stderr, "--argocd-namespace") {
		t.Errorf("suspend of west's child with east's namespace: exit %d, want a refusal naming west's installation and --argocd-namespace:\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
	if _, found, _ := unstructured.NestedMap(getArgoAppIn(t, team, child).Object, "spec", "syncPolicy", "automated"); !found {
		t.Fatal("the refused suspend changed the child")
	}
	res = runDriftscan(t, "breakglass", "suspend", child, "-n", team, "--argocd-namespace", west.Namespace, "--reason", "INC-11 hotfix", "--ttl", "1h")
	if res.Code == 0 || !strings.Contains(res.Stderr, "Application/"+west.Namespace+"/"+parent) || !strings.Contains(res.Stderr, "breakglass suspend "+parent+" -n "+west.Namespace) {
		t.Errorf("suspend of west's child with west's namespace: exit %d, want a refusal that names west's parent and how to suspend it:\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
}

// argoResources lists the resources of the Application ns/name
// (status.resources) as sorted Kind/name.
func argoResources(t *testing.T, ns, name string) []string {
	t.Helper()
	var out []string
	resources, _, _ := unstructured.NestedSlice(getArgoAppIn(t, ns, name).Object, "status", "resources")
	for _, r := range resources {
		r := r.(map[string]any)
		out = append(out, r["kind"].(string)+"/"+r["name"].(string))
	}
	slices.Sort(out)
	return out
}
