package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/calricon/driftscan/fixtures/reconcilers"
	"github.com/calricon/driftscan/report"
)

// Argo CD's OCI sources (repoURL oci:// without a chart): manifests pushed
// to a private registry over TLS as one gzipped OCI layer. The real Argo CD
// resolves the semver range to a tag, syncs that digest and records it in
// status.history; driftscan reads the same artifact at that digest (the
// registry's CA given with --git-ca-file) and scans clean. A newer tag in
// the range, not synced yet, is pending sync, not drift.
func TestArgoCDOCIArtifactScansClean(t *testing.T) {
	needArgo(t)
	ns := env.Namespace(t, nil)
	reg := reconcilers.StartRegistry(t, reconcilers.RegistryOptions{TLS: true})
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, reg.CA, 0o600); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"web/config.yaml": configMap, "web/service.yaml": service}
	push := func(tag string) string {
		return reconcilers.PushArtifact(t, reg, "manifests/web", tag, reconcilers.Artifact{
			ConfigType: "application/vnd.oci.image.config.v1+json",
			Layers:     []reconcilers.Layer{{MediaType: reconcilers.OCILayerTarGzip, Files: files}},
		})
	}
	v1 := push("1.0.0")
	url := "oci://" + reg.Host + "/manifests/web"
	// The repository, as `argocd repo add --type oci --insecure-skip-server-verification`
	// writes it: Argo CD does not trust the test's CA.
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "oci-web", Namespace: argo.Namespace, Labels: map[string]string{"argocd.argoproj.io/secret-type": "repository"}},
		StringData: map[string]string{"type": "oci", "name": "oci-web", "url": url, "insecure": "true"},
	}
	if _, err := env.Client.CoreV1().Secrets(argo.Namespace).Create(t.Context(), secret, metav1.CreateOptions{FieldManager: "argocd-server"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.CoreV1().Secrets(argo.Namespace).Delete(context.Background(), "oci-web", metav1.DeleteOptions{})
	})
	const name = "oci-web"
	createArgoManifest(t, fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %s, namespace: %s}
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: %s}
  source:
    repoURL: %s
    targetRevision: 1.x
    path: web
  syncPolicy:
    automated: {prune: true}
`, name, argo.Namespace, ns, url))
	waitArgoSynced(t, name, "")
	history, _, _ := unstructured.NestedSlice(getArgoApp(t, name).Object, "status", "history")
	if rev, _, _ := unstructured.NestedString(history[len(history)-1].(map[string]any), "revision"); rev != v1 {
		t.Fatalf("Argo CD recorded revision %q in status.history, want the digest %s", rev, v1)
	}

	scanOCI := func() *report.Report { return scan(t, "--from", "argocd", "--app", name, "--git-ca-file", ca) }
	r := scanOCI()
	checkClean(t, r, 2)
	if len(r.Apps) == 1 {
		if s := r.Apps[0].Source; s.Version != v1 || r.Apps[0].Pending != nil {
			t.Errorf("the report's source %+v, pending %+v: want the digest synced, nothing pending", s, r.Apps[0].Pending)
		}
	}

	files["web/config.yaml"] = strings.Replace(configMap, "LOG_LEVEL: info", "LOG_LEVEL: warn", 1)
	v2 := push("1.1.0")
	r = scanOCI()
	checkClean(t, r, 2)
	if len(r.Apps) == 1 {
		want := &report.Pending{Synced: v1, Target: "1.1.0@" + v2, Objects: []report.PendingObject{
			{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "web-config", Change: report.PendingChanged, Paths: []string{".data.LOG_LEVEL"}},
		}}
		if d := cmp.Diff(want, r.Apps[0].Pending); d != "" {
			t.Errorf("pending (-want +got):\n%s", d)
		}
	}
}
