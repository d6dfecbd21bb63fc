package scanner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/render"
	"github.com/calricon/driftscan/report"
)

var sealedSecretGVK = schema.GroupVersionKind{Group: "bitnami.com", Version: "v1alpha1", Kind: "SealedSecret"}

const credentialsApp = `apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
      - name: app
        image: api:1.0
        env:
        - {name: DB_PASSWORD, value: git-db-password}
        - {name: LOG_LEVEL, value: info}
---
apiVersion: bitnami.com/v1alpha1
kind: SealedSecret
metadata: {name: db}
spec:
  encryptedData: {password: AgBysealed-in-git}
  template: {metadata: {name: db}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: api, annotations: {DSN: not-a-secret}}
data: {DSN: "postgres://app:git-dsn-password@db/app"}
`

// sensitiveRows are the findings with their masking flags.
type sensitiveRow struct {
	Object, Path, Git, Live string
	Masked, Sensitive       bool
}

func sensitiveRows(r *report.Report) []sensitiveRow {
	var out []sensitiveRow
	for _, a := range r.Apps {
		for _, o := range a.Objects {
			for _, f := range o.Findings {
				out = append(out, sensitiveRow{o.Kind + "/" + o.Name, f.Path, f.Git, f.Live, f.Masked, f.Sensitive})
			}
		}
	}
	return out
}

// TestCredentialsOutsideSecretsAreMasked: a human puts a new database
// password into an env var, adds an API token beside it, and reseals a
// SealedSecret. The report showed every one of these values, and so did
// every notification and golden made from it. Now an env var named like a
// credential and the data of a Secret-like kind are masked by default and
// marked sensitive; a redact rule limited to a kind masks only that kind;
// and a scan told to reveal sensitive values (for backport
// --allow-sensitive) shows them, still marked, while redact rules hold.
func TestCredentialsOutsideSecretsAreMasked(t *testing.T) {
	env.InstallCRDs(t, "crd-installer", fixture("crds", "sealedsecrets.bitnami.com.yaml"))
	ns := env.Namespace(t, nil)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(credentialsApp), 0o644); err != nil {
		t.Fatal(err)
	}
	manifests, err := render.Manifests(t.Context(), render.Options{Dir: dir, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range manifests {
		env.Apply(t, "argocd-controller", ns, mf.Object)
	}
	env.Patch(t, "kubectl-edit", cluster.Deployment, ns, "api", types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"app","env":[{"name":"DB_PASSWORD","value":"live-db-password"},{"name":"API_TOKEN","value":"live-api-token"},{"name":"LOG_LEVEL","value":"debug"}]}]}}}}`)
	env.Patch(t, "kubectl-edit", sealedSecretGVK, ns, "db", types.MergePatchType, `{"spec":{"encryptedData":{"password":"AgBysealed-live"}}}`)
	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "api", types.MergePatchType,
		`{"metadata":{"annotations":{"DSN":"still-not-a-secret"}},"data":{"DSN":"postgres://app:live-dsn-password@db/app"}}`)

	cfg := scanConfig(ns, config.App{Name: "api", Owner: "team-api", Source: config.Source{Path: dir}})
	cfg.Redact = []config.RedactRule{{Kind: "ConfigMap", Path: `^\.data\.DSN$`}}
	leaks := []string{"git-db-password", "live-db-password", "live-api-token", "AgBysealed", "dsn-password"}

	r := runScan(t, cfg)
	data, _ := json.Marshal(r)
	for _, v := range leaks {
		if strings.Contains(string(data), v) {
			t.Errorf("the report holds %q", v)
		}
	}
	want := []sensitiveRow{
		{"ConfigMap/api", ".data.DSN", "***", "*** (differs)", true, false},
		{"ConfigMap/api", ".metadata.annotations.DSN", "not-a-secret", "still-not-a-secret", false, false},
		{"Deployment/api", `.spec.template.spec.containers[name="app"].env[name="API_TOKEN"]`, "", "***", true, true},
		{"Deployment/api", `.spec.template.spec.containers[name="app"].env[name="DB_PASSWORD"].value`, "***", "*** (differs)", true, true},
		{"Deployment/api", `.spec.template.spec.containers[name="app"].env[name="LOG_LEVEL"].value`, "info", "debug", false, false},
		{"SealedSecret/db", ".spec.encryptedData.password", "***", "*** (differs)", true, true},
	}
	if diff := cmp.Diff(want, sensitiveRows(r)); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}

	revealed := runScan(t, cfg, func(o *Options) { o.RevealSensitive = true })
	want = []sensitiveRow{
		{"ConfigMap/api", ".data.DSN", "***", "*** (differs)", true, false},
		{"ConfigMap/api", ".metadata.annotations.DSN", "not-a-secret", "still-not-a-secret", false, false},
		{"Deployment/api", `.spec.template.spec.containers[name="app"].env[name="API_TOKEN"]`, "", `{"name":"API_TOKEN","value":"live-api-token"}`, false, true},
		{"Deployment/api", `.spec.template.spec.containers[name="app"].env[name="DB_PASSWORD"].value`, "git-db-password", "live-db-password", false, true},
		{"Deployment/api", `.spec.template.spec.containers[name="app"].env[name="LOG_LEVEL"].value`, "info", "debug", false, false},
		{"SealedSecret/db", ".spec.encryptedData.password", "AgBysealed-in-git", "AgBysealed-live", false, true},
	}
	if diff := cmp.Diff(want, sensitiveRows(revealed)); diff != "" {
		t.Errorf("findings with RevealSensitive (-want +got):\n%s", diff)
	}
}

// TestTheSensitiveEnvNamesAreConfigurable: sensitiveEnvNames replaces the
// default patterns.
func TestTheSensitiveEnvNamesAreConfigurable(t *testing.T) {
	s, err := newSensitive([]string{`^LOG_`})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"LOG_LEVEL": true, "DB_PASSWORD": false} {
		f := report.Finding{PathElements: []string{"f:spec", "f:containers", `k:{"name":"app"}`, "f:env", `k:{"name":"` + name + `"}`, "f:value"}}
		if got := s.matches("apps", "Deployment", &f); got != want {
			t.Errorf("%s: sensitive %v, want %v", name, got, want)
		}
	}
}
