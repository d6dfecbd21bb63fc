package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/reconcilers"
	"github.com/calricon/driftscan/fixtures/sops"
	"github.com/calricon/driftscan/report"
)

// A Flux Kustomization of SOPS-encrypted manifests, as Flux's guide has
// teams commit Secrets: encrypted with age by the real sops, decrypted by
// the real kustomize-controller with the key in its decryption Secret.
// driftscan never holds the key; the scan must still be clean, and a
// person's edit of an encrypted value must be theirs, masked.
func TestFluxSOPSDecryptionScansClean(t *testing.T) {
	needFlux(t)
	ns := env.Namespace(t, nil)
	key := sops.NewKey(t)
	files := map[string]string{
		"apps/db/plain.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\ndata: {a: b}\n",
		// Secrets generated from encrypted env files, which
		// kustomize-controller decrypts before the build.
		// A Deployment of the hashed one: kustomize rewrites its
		// references to the name of the decrypted values' hash.
		"apps/db/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: db-client}
spec:
  selector: {matchLabels: {app: db-client}}
  template:
    metadata: {labels: {app: db-client}}
    spec:
      containers:
      - {name: client, image: "nginx:1.27", envFrom: [{secretRef: {name: env-hashed}}]}
      volumes: [{name: token, secret: {secretName: env-hashed}}]
`,
		"apps/db/kustomization.yaml": `resources: [creds.yaml, settings.yaml, plain.yaml, deploy.yaml]
secretGenerator:
- name: env-hashed
  envs: [hashed.env]
- name: env-fixed
  envs: [fixed.env]
  options: {disableNameSuffixHash: true}
`,
		"apps/db/hashed.env": sops.EncryptFile(t, key, "hashed.env", "TOKEN=sops-plain-hashed\n"),
		"apps/db/fixed.env":  sops.EncryptFile(t, key, "fixed.env", "USER=app\nPASSWORD=sops-plain-fixed\n"),
	}
	for name, text := range sops.Manifests(t, key) {
		files["apps/db/"+name] = text
	}
	repo := gitServer.NewRepo(t, files)
	env.Create(t, "kubectl-create", ns, cluster.Object(t, fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: sops-age}\nstringData:\n  age.agekey: %q\n", key.Identity)))
	const name = "sealed"
	createFluxSource(t, ns, name, repo)
	// Applied once (interval 1h): kustomize-controller does not revert the
	// edits below before the scan sees them.
	createKustomizationOf(t, ns, name, "apps/db", "1h", "decryption:\n  provider: sops\n  secretRef: {name: sops-age}\n")
	waitFluxReady(t, reconcilers.Kustomization, ns, name, repo.Head())
	creds := env.Get(t, cluster.Secret, ns, "db-creds")
	if d, _, _ := unstructured.NestedStringMap(creds.Object, "data"); d["password"] != base64.StdEncoding.EncodeToString([]byte("sops-plain-password")) {
		t.Fatalf("kustomize-controller applied %v: the test expects the decrypted password", d)
	}
	mf, _ := json.Marshal(creds.GetManagedFields())
	t.Logf("managedFields of db-creds: %s", mf)

	fixed := env.Get(t, cluster.Secret, ns, "env-fixed")
	if d, _, _ := unstructured.NestedStringMap(fixed.Object, "data"); len(d) != 2 || d["PASSWORD"] != base64.StdEncoding.EncodeToString([]byte("sops-plain-fixed")) {
		t.Fatalf("kustomize-controller applied env-fixed with %v: the test expects the env file decrypted, without sops_* entries", d)
	}

	r := scan(t, "--from", "flux", "--app", name)
	checkClean(t, r, 5)
	noPlaintext(t, r, sops.Leaks...)
	// The hashed Secret's live name is a hash of the decrypted values.
	if len(r.Warnings) != 1 || r.Warnings[0].Code != report.WarnEncryptedNameSkipped || !strings.HasPrefix(r.Warnings[0].Object, "Secret/"+ns+"/env-hashed-") {
		t.Errorf("warnings %+v: want one EncryptedNameSkipped for env-hashed", r.Warnings)
	}

	env.Patch(t, "kubectl-edit", cluster.Secret, ns, "db-creds", types.MergePatchType, `{"data":{"password":"`+base64.StdEncoding.EncodeToString([]byte("typed-by-hand"))+`"}}`)
	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "settings", types.MergePatchType, `{"data":{"dsn":"postgres://app:typed-by-hand@db.internal/app"}}`)
	r = scan(t, "--from", "flux", "--app", name)
	noPlaintext(t, r, append(sops.Leaks, "typed-by-hand")...)
	got := activeFindings(r)
	if len(got) != 2 {
		t.Fatalf("after a person's edits of two encrypted values, want two findings; got:\n%s", describe(got))
	}
	for _, f := range got {
		if f.Class != report.ClassHuman || f.Manager != "kubectl-edit" || f.Type != report.TypeChanged {
			t.Errorf("finding %s %s: %s by %q (%s), want a person's change by kubectl-edit", f.Object, f.Path, f.Class, f.Manager, f.Type)
		}
		if want := map[string]string{"Secret/db-creds": ".data.password", "ConfigMap/settings": ".data.dsn"}[f.Object]; f.Path != want {
			t.Errorf("finding %s %s, want %s", f.Object, f.Path, want)
		}
	}
}

// noPlaintext fails when the report holds one of leaks anywhere.
func noPlaintext(t *testing.T, r *report.Report, leaks ...string) {
	t.Helper()
	data, _ := json.Marshal(r)
	for _, s := range leaks {
		if strings.Contains(string(data), s) {
			t.Errorf("the report holds %q, a value that is encrypted in Git", s)
		}
	}
}
