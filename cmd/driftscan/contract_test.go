package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/golden"
	"github.com/calricon/driftscan/render"
	"github.com/calricon/driftscan/report"
)

// contractConfig writes a ScanConfig with app web (fixtures/apps/web) in ns
// and the given contracts section, and returns its path.
func contractConfig(t *testing.T, ns, contracts string) string {
	t.Helper()
	abs, _ := filepath.Abs("../../fixtures/apps/web")
	doc := fmt.Sprintf(`apiVersion: driftscan.dev/v1alpha1
kind: ScanConfig
apps:
- {name: web, owner: team-web, namespace: %s, source: {path: %s}}
contracts:
%s`, ns, abs, contracts)
	path := filepath.Join(t.TempDir(), "scan.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func productionContract(ns string) string {
	return fmt.Sprintf(`- name: production
  namespaces: [%s]
  owner: platform-team
  allow:
  - {class: operator}
  - {class: pipeline, managers: [kubectl-set], users: ["system:serviceaccount:ci:deployer"]}
  - {class: human, during: breakglass}
  selfHeal: forbidden
`, ns)
}

func TestScanJudgesEveryFindingAgainstTheContractAndFailsOnViolation(t *testing.T) {
	env.Need(t)
	ns := driftedWeb(t)
	res := runCLI(t, "scan", "--kubeconfig", env.Kubeconfig, "--config", contractConfig(t, ns, productionContract(ns)), "-o", "json", "--fail-on", "violation")
	if res.code != report.ExitDrift {
		t.Fatalf("exit %d, want 1 for the human edit; stderr:\n%s", res.code, res.err)
	}
	var r report.Report
	if err := json.Unmarshal([]byte(res.out), &r); err != nil {
		t.Fatal(err)
	}
	verdicts := map[string]string{}
	for _, o := range r.Apps[0].Objects {
		for _, f := range o.Findings {
			verdicts[o.Kind+" "+f.Path] = string(f.Contract.Verdict) + " " + f.Contract.Rule
		}
	}
	want := map[string]string{
		`ConfigMap .data.LOG_LEVEL`: "violation ",
		// No audit attribution says who ran set image: unknown, not guessed.
		`Deployment .spec.template.spec.containers[name="app"].image`: `unknown allow[1] {class: pipeline, managers: [kubectl-set], users: ["system:serviceaccount:ci:deployer"]}`,
	}
	for k, v := range want {
		if verdicts[k] != v {
			t.Errorf("%s: verdict %q, want %q (all: %v)", k, verdicts[k], v, verdicts)
		}
	}
	if r.Summary.ByVerdict[report.VerdictViolation] != 1 || r.Summary.ByVerdict[report.VerdictUnknown] != 1 {
		t.Errorf("byVerdict: %v", r.Summary.ByVerdict)
	}

	// The same drift where no contract covers the namespace: uncovered,
	// counted, and --fail-on violation passes.
	res = runCLI(t, "scan", "--kubeconfig", env.Kubeconfig, "--config", contractConfig(t, ns, productionContract("prod-elsewhere")), "-o", "json", "--fail-on", "violation")
	if res.code != report.ExitOK {
		t.Fatalf("exit %d, want 0 with nothing covered; stderr:\n%s", res.code, res.err)
	}
	r = report.Report{}
	if err := json.Unmarshal([]byte(res.out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Summary.ByVerdict[report.VerdictUncovered] != 2 {
		t.Errorf("byVerdict: %v, want 2 uncovered", r.Summary.ByVerdict)
	}
}

func TestContractShowMarkdown(t *testing.T) {
	res := runCLI(t, "contract", "show", "--config", "testdata/contracts.yaml", "-o", "markdown")
	if res.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.code, res.err)
	}
	golden.Check(t, "contract-show.md.golden", []byte(res.out))
}

func TestContractCheckFailsOnOverlapsAndMissingWebhooks(t *testing.T) {
	ns := env.Namespace(t, nil)
	cfg := contractConfig(t, ns, productionContract(ns)+`- name: mesh
  namespaces: ["`+ns[:len(ns)-2]+`*"]
  allow: [{class: webhook, webhooks: [istio-sidecar-injector]}]
`)
	res := runCLI(t, "contract", "check", "--config", cfg, "--kubeconfig", env.Kubeconfig)
	if res.code != 1 {
		t.Fatalf("exit %d, want 1; out:\n%s\nstderr:\n%s", res.code, res.out, res.err)
	}
	for _, want := range []string{
		`error: contract "mesh" (line 14): namespaces ` + ns[:len(ns)-2] + `* overlaps ` + ns + ` of contract "production"`,
		"error: namespace " + ns + " is covered by contracts production, mesh: only the first applies",
		`error: contract "mesh" (line 16): allow[0]: no MutatingWebhookConfiguration istio-sidecar-injector in the cluster`,
		`warning: contract "production" (line 6): allow[0] name no users or groups`,
	} {
		if !strings.Contains(res.out, want) {
			t.Errorf("check does not say %q:\n%s", want, res.out)
		}
	}
}

// impersonate returns a dynamic client acting as user (with system:masters,
// so that only the admission policy decides).
func impersonate(t *testing.T, user string) dynamic.Interface {
	t.Helper()
	env.Need(t)
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:masters", "system:authenticated"}}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dyn
}

func TestContractAdmissionIsEnforcedAndLiftedByBreakglassSuspend(t *testing.T) {
	env.Need(t)
	appNS, argoNS := argoApp(t)
	paramsNS := env.Namespace(t, nil)
	params := paramsNS + "/driftscan-breakglass"
	cfg := contractConfig(t, appNS, productionContract(appNS))
	out := filepath.Join(t.TempDir(), "contracts.yaml")
	res := runCLI(t, "contract", "admission", "--config", cfg, "--kubeconfig", env.Kubeconfig, "--contract-params", params, "-o", out, "--git-cache", t.TempDir())
	if res.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.code, res.err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	docs := render.SplitYAMLDocuments(data)
	var kinds []string
	for _, d := range docs {
		obj := cluster.Object(t, string(d.Data))
		if obj.Object == nil {
			continue
		}
		kinds = append(kinds, obj.GetKind())
		if obj.GetKind() == "ValidatingAdmissionPolicy" {
			// The kinds fixtures/apps/web declares, with Deployment's scale.
			rules := fmt.Sprint(obj.Object["spec"].(map[string]any)["matchConstraints"])
			for _, want := range []string{"configmaps", "secrets", "services", "deployments deployments/scale"} {
				if !strings.Contains(rules, want) {
					t.Errorf("matchConstraints %s lack %s", rules, want)
				}
			}
		}
		env.Apply(t, "kubectl", "", obj)
		if obj.GetNamespace() == "" {
			gvk, name := obj.GroupVersionKind(), obj.GetName()
			t.Cleanup(func() {
				gvr := schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: strings.ToLower(gvk.Kind) + "s"}
				_ = env.Dynamic.Resource(gvr).Delete(context.Background(), name, metav1.DeleteOptions{})
			})
		}
	}
	if got := strings.Join(kinds, ","); got != "ConfigMap,ValidatingAdmissionPolicy,ValidatingAdmissionPolicyBinding" {
		t.Fatalf("manifests: %s", got)
	}

	alice := impersonate(t, "alice@example.com")
	edit := func(value string, dryRun bool) error {
		opts := metav1.PatchOptions{FieldManager: "kubectl-edit"}
		if dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		_, err := alice.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(appNS).
			Patch(t.Context(), "web-config", types.MergePatchType, []byte(`{"data":{"LOG_LEVEL":"`+value+`"}}`), opts)
		return err
	}
	until := func(what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) { return cond(), nil }); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
	until("the policy", func() bool { return apierrors.IsForbidden(edit("x", true)) })
	err = edit("trace", false)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "contract production (owner platform-team) does not allow alice@example.com (field manager kubectl-edit, class human)") ||
		!strings.Contains(err.Error(), "driftscan breakglass suspend APP --ttl 1h") {
		t.Fatalf("want the contract's denial, got %v", err)
	}

	res = runCLI(t, "breakglass", "suspend", "web", "-n", argoNS, "--ttl", "1h", "--reason", "INC-4211", "--kubeconfig", env.Kubeconfig, "--contract-params", params)
	if res.code != 0 || !strings.Contains(res.out, "lifted the contract's break-glass rules in ConfigMap/"+params) {
		t.Fatalf("suspend: exit %d\n%s\n%s", res.code, res.out, res.err)
	}
	until("the lift", func() bool { return edit("x", true) == nil })
	if err := edit("trace", false); err != nil {
		t.Fatalf("the hotfix was denied during break-glass: %v", err)
	}

	res = runCLI(t, "breakglass", "resume", "web", "-n", argoNS, "--force", "--kubeconfig", env.Kubeconfig, "--contract-params", params)
	if res.code != 0 || !strings.Contains(res.out, "ended the lift in ConfigMap/"+params) {
		t.Fatalf("resume: exit %d\n%s\n%s", res.code, res.out, res.err)
	}
	until("the end of the lift", func() bool { return apierrors.IsForbidden(edit("x", true)) })
}

func TestScanFromArgoCDReportsSelfHealWhereTheContractForbidsIt(t *testing.T) {
	env.Need(t)
	appNS, argoNS := argoApp(t)
	path := filepath.Join(t.TempDir(), "scan.yaml")
	doc := "apiVersion: driftscan.dev/v1alpha1\nkind: ScanConfig\ncontracts:\n" + productionContract(appNS)
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	res := runCLI(t, "scan", "--kubeconfig", env.Kubeconfig, "--config", path, "--from", "argocd", "--argocd-namespace", argoNS,
		"-o", "json", "--git-cache", t.TempDir(), "--fail-on", "violation")
	if res.code != report.ExitDrift {
		t.Fatalf("exit %d; stderr:\n%s", res.code, res.err)
	}
	var r report.Report
	if err := json.Unmarshal([]byte(res.out), &r); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, o := range r.Apps[0].Objects {
		if o.Kind != "Application" {
			continue
		}
		f := o.Findings[0]
		found = o.Namespace == argoNS && o.Name == "web" && f.Path == ".spec.syncPolicy.automated.selfHeal" &&
			f.Contract.Verdict == report.VerdictViolation && f.Contract.Rule == "selfHeal: forbidden"
		if !found {
			t.Errorf("self-heal finding: %+v on %s", f, o.Ref())
		}
	}
	if !found {
		t.Fatalf("no self-heal violation for Application %s/web: %+v", argoNS, r.Apps[0].Objects)
	}
}
