package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/calricon/driftscan/doctor"
	"github.com/calricon/driftscan/doctor/doctortest"
)

// anonymize puts placeholders for the test's namespaces.
func anonymize(s string, names map[string]string) string {
	// Longest first: one generated name may contain another.
	keys := make([]string, 0, len(names))
	for k := range names {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return len(b) - len(a) })
	for _, k := range keys {
		s = strings.ReplaceAll(s, k, names[k])
	}
	return s
}

func TestDoctorPassesForTheChartsServiceAccount(t *testing.T) {
	env.Need(t)
	in := doctortest.InstallChart(t, env, `rbac: {secrets: true}`)
	app := env.Namespace(t, nil)
	in.EventuallyCan(t, "list", "", "secrets", app, "")
	res := runCLI(t, "doctor", "--kubeconfig", env.Kubeconfig, "--as", in.User,
		"--path", "../../fixtures/apps/web", "-n", app, "--state", "configmap:"+in.Namespace+"/"+in.State)
	if res.code != 0 || res.err != "" {
		t.Fatalf("exit %d, stderr %q, want 0 and nothing\n%s", res.code, res.err, res.out)
	}
	got := anonymize(res.out, map[string]string{in.Namespace: "RELEASE", app: "APP"})
	want := `identity: system:serviceaccount:RELEASE:RELEASE-driftscan
groups:   system:serviceaccounts, system:serviceaccounts:RELEASE, system:authenticated

the scan needs 15 permissions, 0 missing:
  ok       get /version
  ok       get /api
  ok       get /apis
  ok       get /openapi/v3
  ok       list configmaps in namespace APP
  ok       list deployments.apps in namespace APP
  ok       list secrets in namespace APP
  ok       list services in namespace APP
  ok       list mutatingwebhookconfigurations.admissionregistration.k8s.io cluster-wide (optional)
  ok       list namespaces cluster-wide (optional)
  ok       list horizontalpodautoscalers.autoscaling in namespace APP (optional)
  ok       get configmaps/RELEASE-driftscan-state in namespace RELEASE
  ok       update configmaps/RELEASE-driftscan-state in namespace RELEASE
  ok       get leases.coordination.k8s.io/RELEASE-driftscan-state in namespace RELEASE
  ok       update leases.coordination.k8s.io/RELEASE-driftscan-state in namespace RELEASE

the scan can run as system:serviceaccount:RELEASE:RELEASE-driftscan, which holds no write permission the scan does not need.
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

func TestDoctorNamesWhatIsMissingAndExitsOne(t *testing.T) {
	app := env.Namespace(t, nil)
	in := doctortest.InstallChart(t, env, `
rbac:
  scope: namespaces
  rules: [{apiGroups: ["", "apps", "autoscaling"], resources: [configmaps, services, deployments, horizontalpodautoscalers]}]
  namespaces: [`+app+`]
`)
	in.EventuallyCan(t, "list", "apps", "deployments", app, "")
	res := runCLI(t, "doctor", "--kubeconfig", env.Kubeconfig, "--as", in.User, "--path", "../../fixtures/apps/web", "-n", app)
	if res.code != 1 || res.err != "" {
		t.Fatalf("exit %d, stderr %q, want 1 and nothing\n%s", res.code, res.err, res.out)
	}
	got := anonymize(res.out, map[string]string{in.Namespace: "RELEASE", app: "APP"})
	for _, want := range []string{
		"  MISSING  list secrets in namespace APP\n",
		"\nerror: cannot list secrets in namespace APP: the app web declares a Secret there\n",
		// Without --state the chart's update on its state ConfigMap is more
		// than this scan needs.
		"\nwarning: not needed: update configmaps/RELEASE-driftscan-state in namespace RELEASE; fix: remove \"update\" on configmaps from the Role or ClusterRole a RoleBinding in RELEASE grants\n",
		"\n1 permission the scan needs is missing: grant it to system:serviceaccount:RELEASE:RELEASE-driftscan.\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output does not have %q:\n%s", want, got)
		}
	}
}

func TestDoctorWarnsAboutWritesInJSON(t *testing.T) {
	env.Need(t)
	in := doctortest.InstallChart(t, env, `rbac: {secrets: true}`)
	app := env.Namespace(t, nil)
	in.Grant(t, app, "deployer", rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "patch", "delete"}})
	res := runCLI(t, "doctor", "--kubeconfig", env.Kubeconfig, "--as", in.User,
		"--resources", "apps/deployments,secrets", "-n", app, "--state", "configmap:"+in.Namespace+"/"+in.State, "-o", "json")
	if res.code != 0 || res.err != "" {
		t.Fatalf("exit %d, stderr %q, want 0 and nothing\n%s", res.code, res.err, res.out)
	}
	var got doctor.Report
	if err := json.Unmarshal([]byte(res.out), &got); err != nil {
		t.Fatalf("%v\n%s", err, res.out)
	}
	never := `from the Role or ClusterRole a RoleBinding in ` + app + ` grants`
	want := []doctor.Grant{
		{Verb: "patch", Group: "apps", Resource: "deployments", Namespace: app, Fix: `remove "patch" on deployments.apps ` + never},
		{Verb: "delete", Group: "apps", Resource: "deployments", Namespace: app, Fix: `remove "delete" on deployments.apps ` + never},
	}
	if diff := cmp.Diff(want, got.Excess); diff != "" {
		t.Errorf("excess (-want +got):\n%s", diff)
	}
	wantNeed := doctor.Need{Verb: "list", Group: "apps", Resource: "deployments", Namespace: app, Why: "named by --resources"}
	if !slices.Contains(got.Needed, wantNeed) || !got.OK || len(got.Missing) != 0 || got.Identity != in.User {
		t.Errorf("needed %v, ok %v, missing %v, identity %q", got.Needed, got.OK, got.Missing, got.Identity)
	}
	if !strings.Contains(res.out, `"missing": []`) {
		t.Errorf("JSON without an empty missing list:\n%s", res.out)
	}
}

func TestDoctorExitsTwoWhenAnAppDoesNotRender(t *testing.T) {
	app := env.Namespace(t, nil)
	res := runCLI(t, "doctor", "--kubeconfig", env.Kubeconfig, "--path", "../../fixtures/apps/needs-crd", "-n", app)
	want := "error: app needs-crd: Gadget not-installed: kind Gadget.gadgets.example.com is not served by the cluster (is its CRD installed?)\n"
	if res.code != 2 || res.err != want {
		t.Errorf("exit %d, stderr %q; want 2 and %q", res.code, res.err, want)
	}
	// The rest is still checked: the ConfigMap next to the Gadget.
	if !strings.Contains(res.out, "  ok       list configmaps in namespace "+app+"\n") {
		t.Errorf("output does not check the ConfigMap:\n%s", res.out)
	}
}

func TestDoctorBadInvocationsSayWhatIsWrong(t *testing.T) {
	env.Need(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{}, "give --config FILE, --path DIR, --resources GROUP/RESOURCE,... or --from argocd|flux"},
		{[]string{"--path", ".", "--resources", "secrets"}, "give only one of --config, --path and --resources"},
		{[]string{"--resources", "Deployment"}, `--resources "Deployment": want the plural resource name (deployments), not the kind`},
		{[]string{"--resources", "apps/deployments/scale"}, `--resources "apps/deployments/scale": want GROUP/RESOURCE`},
		{[]string{"--resources", "secrets", "--lease", "nope"}, `--lease "nope": want NAMESPACE/NAME`},
		{[]string{"--resources", "secrets", "--state", "configmap:nope"}, `--state: state "configmap:nope": want configmap:NAMESPACE/NAME`},
		{[]string{"--resources", "secrets", "-o", "yaml"}, `--output "yaml": want text or json`},
		{[]string{"--resources", "secrets", "--from", "jenkins"}, `--from "jenkins": want argocd or flux`},
	}
	for _, c := range cases {
		args := append([]string{"doctor", "--kubeconfig", env.Kubeconfig}, c.args...)
		res := runCLI(t, args...)
		if res.code != 2 || !strings.Contains(res.err, c.want) || res.out != "" {
			t.Errorf("%v: exit %d stdout %q stderr %q; want exit 2 and %q", c.args, res.code, res.out, res.err, c.want)
		}
	}
}

func TestParseResourceReadsEveryForm(t *testing.T) {
	cases := map[string][2]string{
		"apps/deployments":            {"apps", "deployments"},
		"deployments.apps":            {"apps", "deployments"},
		"secrets":                     {"", "secrets"},
		"core/secrets":                {"", "secrets"},
		"/secrets":                    {"", "secrets"},
		"ingresses.networking.k8s.io": {"networking.k8s.io", "ingresses"},
	}
	for spec, want := range cases {
		g, r, err := parseResource(spec)
		if err != nil || g != want[0] || r != want[1] {
			t.Errorf("parseResource(%q) = %q, %q, %v; want %q, %q", spec, g, r, err, want[0], want[1])
		}
	}
}
