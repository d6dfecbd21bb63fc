package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// registerCluster writes an Argo CD cluster secret in ns naming the test's
// control plane name, at its own address and with the admin's client
// certificate, as `argocd cluster add` registers a cluster.
func registerCluster(t *testing.T, ns, name string) string {
	t.Helper()
	server := strings.TrimRight(env.Config.Host, "/")
	tls := env.Config.TLSClientConfig
	config, err := json.Marshal(map[string]any{"tlsClientConfig": map[string]any{"caData": tls.CAData, "certData": tls.CertData, "keyData": tls.KeyData}})
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-" + name, Namespace: ns, Labels: map[string]string{"argocd.argoproj.io/secret-type": "cluster"}},
		StringData: map[string]string{"name": name, "server": server, "config": string(config)},
	}
	if _, err := env.Client.CoreV1().Secrets(ns).Create(t.Context(), secret, metav1.CreateOptions{FieldManager: "argocd-server"}); err != nil {
		t.Fatalf("register cluster %s: %v", name, err)
	}
	return server
}

// A platform whose Argo CD knows its own cluster by a name of its own (its
// cluster secret), and with argocd-cm's cluster.inClusterEnabled "false"
// deploys nothing to https://kubernetes.default.svc. The Application that
// names the cluster "hub" is synced and self-healed; driftscan skipped it
// as another cluster's, and with --argocd-cluster hub scans it. The
// Application to in-cluster is refused by Argo CD (nothing compared or
// synced); driftscan compared it as an app with self-heal on, and now it
// is an app error saying Argo CD refuses it.
func TestArgoCDClusterNames(t *testing.T) {
	needArgo(t)
	hub := startSecondArgoCD(t, "argocd-hub", "hub")
	if err := hub.Set(t.Context(), "cluster.inClusterEnabled", "false"); err != nil {
		t.Fatal(err)
	}
	registerCluster(t, hub.Namespace, "hub")
	dest := env.Namespace(t, nil)
	suffix := dest[strings.LastIndex(dest, "-")+1:]
	named, inCluster := "named-"+suffix, "in-cluster-"+suffix
	repo := gitServer.NewRepo(t, plainApp)
	createArgoApp(t, argoApp{Name: named, Namespace: dest, Repo: repo, Path: "web", Automated: "{selfHeal: true}", AppNamespace: hub.Namespace,
		Destination: "{name: hub, namespace: " + dest + "}"})
	waitArgoSyncedIn(t, hub, hub.Namespace, named, repo.Head())
	humanEdit(t, dest, "debug")
	waitReverted(t, dest, "info", time.Minute)

	other := env.Namespace(t, nil)
	createArgoApp(t, argoApp{Name: inCluster, Namespace: other, Repo: repo, Path: "web", Automated: "{selfHeal: true}", AppNamespace: hub.Namespace})
	refused := waitArgoCondition(t, hub.Namespace, inCluster, "disabled")
	if refused == "" {
		t.Fatalf("Argo CD did not refuse the Application to in-cluster with cluster.inClusterEnabled false")
	}
	t.Logf("Argo CD: %s", refused)

	args := []string{"--from", "argocd", "--argocd-namespace", hub.Namespace}
	res := runDriftscan(t, append([]string{"scan", "-o", "json", "-q", "--git-cache", t.TempDir(), "--app", named}, args...)...)
	if res.Code == 0 || !strings.Contains(res.Stderr, `destination cluster "hub" is not the scanned cluster`) || !strings.Contains(res.Stderr, "--argocd-cluster") {
		t.Errorf("without --argocd-cluster: exit %d, want %s skipped, its cluster unknown by that name, and the flag named:\n%s", res.Code, named, res.Stderr)
	}

	args = append(args, "--argocd-cluster", "hub")
	humanEdit(t, dest, "debug")
	r := scanExiting(t, 2, append(args, "--app", named)...)
	if hint := logLevelHint(r); !strings.Contains(hint, "will be reverted at the next sync") {
		t.Errorf("with --argocd-cluster hub, the edit's hint is %q, want it to say self-heal reverts it", hint)
	}
	waitReverted(t, dest, "info", time.Minute)
	checkClean(t, scan(t, append(args, "--app", named)...), 3)

	r = scanExiting(t, 2, append(args, "--app", inCluster)...)
	if len(r.Apps) != 1 || !strings.Contains(r.Apps[0].Error, `cluster.inClusterEnabled is "false"`) || len(r.Apps[0].Objects) != 0 {
		t.Errorf("the Application to in-cluster: apps %+v; want one app error saying Argo CD refuses in-cluster, nothing compared", r.Apps)
	}
}
