package contract_test

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/contract"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/render"
	"github.com/calricon/driftscan/report"
	"github.com/calricon/driftscan/run"
)

const twoDeployments = `apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec: {containers: [{name: app, image: "nginx:1.25"}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: admin}
spec:
  selector: {matchLabels: {app: admin}}
  template:
    metadata: {labels: {app: admin}}
    spec: {containers: [{name: app, image: "nginx:1.25"}]}
`

func TestAScanJudgesSetImageByWhoRanItFromTheAuditLog(t *testing.T) {
	ns := env.Namespace(t, nil)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(twoDeployments), 0o600); err != nil {
		t.Fatal(err)
	}
	manifests, err := render.Manifests(t.Context(), render.Options{Dir: dir, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	argo := env.As(t, cluster.User{Name: argoSA, Groups: []string{"system:masters"}})
	for _, mf := range manifests {
		argo.Apply(t, "argocd-controller", ns, mf.Object)
	}
	// The same kubectl set image, by the pipeline's service account and by
	// a person: managedFields say kubectl-set for both.
	setImage := `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.27"}]}}}}`
	ci := env.As(t, cluster.User{Name: deployerSA, Groups: []string{"system:masters"}})
	ci.Patch(t, "kubectl-set", cluster.Deployment, ns, "api", types.StrategicMergePatchType, setImage)
	person := env.As(t, cluster.User{Name: human, Groups: []string{"system:masters", "sre"}})
	person.Patch(t, "kubectl-set", cluster.Deployment, ns, "admin", types.StrategicMergePatchType, setImage)
	env.AuditLog.Wait(t, ci.LastAuditID(t), person.LastAuditID(t))

	cfg := config.New()
	cfg.Apps = []config.App{{Name: "shop", Namespace: ns, Source: config.Source{Path: dir}}}
	cfg.Contracts = []contract.Contract{production(ns)}
	opts := run.DefaultOptions()
	opts.Scan.RESTConfig, opts.Scan.GitCacheDir = env.Config, t.TempDir()
	opts.Scan.AuditLogs = []string{env.AuditLog.Dir}
	res, err := run.Scan(t.Context(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]report.Verdict{}
	for _, o := range res.Report.Apps[0].Objects {
		for _, f := range o.Findings {
			if f.Path == `.spec.template.spec.containers[name="app"].image` {
				got[o.Name] = f.Contract.Verdict
				if f.Attribution == nil || f.Attribution.Confidence != report.ConfidenceExact {
					t.Errorf("%s: the audit log gave no exact attribution: %+v", o.Name, f.Attribution)
				}
			}
		}
	}
	want := map[string]report.Verdict{"api": report.VerdictAllowed, "admin": report.VerdictViolation}
	for name, v := range want {
		if got[name] != v {
			t.Errorf("%s's set image: verdict %q, want %q", name, got[name], v)
		}
	}
}
