package e2e

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/calricon/driftscan/fixtures/cluster"
)

// Argo CD Image Updater's write-back to Git: the image an app runs is set
// in .argocd-source-<app>.yaml next to its kustomization or chart, not in
// the kustomization, the chart's values or the Application (a
// .argocd-source.yaml there applies to every app of the folder). The real
// Argo CD merges those files into the source before it renders; driftscan
// must too, or every updated image is drift.
func TestArgoCDSourceParameterFilesScanClean(t *testing.T) {
	needArgo(t)
	ns := env.Namespace(t, nil)
	const kust, chart = "image-updater-kustomize", "image-updater-helm"
	deploy := `apiVersion: apps/v1
kind: Deployment
metadata: {name: NAME}
spec:
  replicas: 1
  selector: {matchLabels: {app: NAME}}
  template:
    metadata: {labels: {app: NAME}}
    spec:
      containers: [{name: web, image: IMAGE}]
`
	repo := gitServer.NewRepo(t, map[string]string{
		"app/kustomization.yaml": "resources: [deploy.yaml]\nimages:\n- {name: nginx, newTag: \"1.25\"}\n",
		"app/deploy.yaml":        replace(deploy, "NAME", "web", "IMAGE", "nginx"),
		// As Image Updater writes it, and a file for every app of the folder.
		"app/.argocd-source-" + kust + ".yaml":    "kustomize:\n  images:\n  - nginx:1.27\n",
		"app/.argocd-source.yaml":                 "kustomize:\n  commonAnnotations: {owner: platform}\n",
		"chart/Chart.yaml":                        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"chart/values.yaml":                       "tag: \"1.25\"\n",
		"chart/templates/deploy.yaml":             replace(deploy, "NAME", "{{ .Release.Name }}", "IMAGE", "nginx:{{ .Values.tag }}"),
		"chart/.argocd-source-" + chart + ".yaml": "helm:\n  parameters:\n  - name: tag\n    value: \"1.27\"\n    forcestring: true\n",
	})
	createGitApp(t, kust, ns, repo.URL, "app", "")
	createGitApp(t, chart, ns, repo.URL, "chart", "")
	waitArgoSynced(t, kust, "")
	waitArgoSynced(t, chart, "")
	for _, name := range []string{"web", chart} {
		d := env.Get(t, cluster.Deployment, ns, name)
		containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		if len(containers) != 1 || containers[0].(map[string]any)["image"] != "nginx:1.27" {
			t.Fatalf("Argo CD synced %s with %v: the test expects the parameter file's image", name, containers)
		}
	}
	if a := env.Get(t, cluster.Deployment, ns, "web").GetAnnotations()["owner"]; a != "platform" {
		t.Fatalf("Argo CD synced annotations %v: the test expects .argocd-source.yaml's", a)
	}

	checkClean(t, scan(t, "--from", "argocd", "--app", kust), 1)
	checkClean(t, scan(t, "--from", "argocd", "--app", chart), 1)
}

// Argo CD's build environment in an Application's kustomize images and
// labels and its Helm parameters: the revision it renders, its name. The
// real Argo CD substitutes them; driftscan must substitute the same values,
// with the commit it scans.
func TestArgoCDBuildEnvironmentScansClean(t *testing.T) {
	needArgo(t)
	ns := env.Namespace(t, nil)
	const kust, chart = "build-env-kustomize", "build-env-helm"
	repo := gitServer.NewRepo(t, map[string]string{
		"app/kustomization.yaml":  "resources: [cm.yaml]\n",
		"app/cm.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {mode: normal}\n",
		"chart/Chart.yaml":        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"chart/values.yaml":       "build: none\n",
		"chart/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}}\ndata: {build: {{ .Values.build | quote }}}\n",
	})
	createGitApp(t, kust, ns, repo.URL, "app", `kustomize:
  commonLabels: {app-name: $ARGOCD_APP_NAME, revision: $ARGOCD_APP_REVISION_SHORT}
`)
	createGitApp(t, chart, ns, repo.URL, "chart", `helm:
  parameters: [{name: build, value: "$ARGOCD_APP_NAME@$ARGOCD_APP_REVISION"}]
`)
	waitArgoSynced(t, kust, "")
	waitArgoSynced(t, chart, "")
	head := repo.Head()
	if l := env.Get(t, cluster.ConfigMap, ns, "settings").GetLabels(); l["app-name"] != kust || l["revision"] != head[:7] {
		t.Fatalf("Argo CD synced labels %v: the test expects the build environment substituted", l)
	}
	if d, _, _ := unstructured.NestedString(env.Get(t, cluster.ConfigMap, ns, chart).Object, "data", "build"); d != chart+"@"+head {
		t.Fatalf("Argo CD synced build %q: the test expects the parameter substituted", d)
	}
	checkClean(t, scan(t, "--from", "argocd", "--app", kust), 1)
	checkClean(t, scan(t, "--from", "argocd", "--app", chart), 1)
}

// replace replaces each old with its new in s.
func replace(s string, oldNew ...string) string {
	for i := 0; i+1 < len(oldNew); i += 2 {
		s = strings.ReplaceAll(s, oldNew[i], oldNew[i+1])
	}
	return s
}
