package doctor

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/doctor/doctortest"
	"github.com/calricon/driftscan/fixtures/cluster"
)

var env *cluster.Env

func TestMain(m *testing.M) { os.Exit(cluster.Main(m, &env)) }

// webConfig is a config with the app web (fixtures/apps/web: a ConfigMap,
// a Deployment, a Secret and a Service) in namespace ns.
func webConfig(t *testing.T, ns string) *config.Config {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "fixtures", "apps", "web"))
	if err != nil {
		t.Fatal(err)
	}
	return &config.Config{Apps: []config.App{{Name: "web", Namespace: ns, Source: config.Source{Path: dir}}}}
}

// webResources are the resources app web declares in ns.
func webResources(t *testing.T, ns string) []Resource {
	t.Helper()
	env.Need(t)
	opts := DefaultAppOptions()
	opts.Mapper = env.Mapper
	res, err := AppResources(t.Context(), webConfig(t, ns), opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// check runs Check until its result stops changing (the RBAC authorizer
// learns of new bindings a moment after they are made) and is want's, then
// returns it.
func check(t *testing.T, client kubernetes.Interface, opts Options, want func(Result) bool) Result {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := Check(t.Context(), client, opts)
		if err != nil {
			t.Fatal(err)
		}
		if want(r) || time.Now().After(deadline) {
			return r
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func needString(ns []Need) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.String()+": "+n.Why)
	}
	return out
}

func TestTheChartsRBACIsExactlyWhatTheScanNeeds(t *testing.T) {
	in := doctortest.InstallChart(t, env, `rbac: {secrets: true}`)
	app := env.Namespace(t, nil)
	opts := DefaultOptions()
	opts.Resources = webResources(t, app)
	opts.State = &ObjectRef{Namespace: in.Namespace, Name: in.State}
	opts.From, opts.FromNamespace = FromArgoCD, "argocd"

	r := check(t, in.Client, opts, func(r Result) bool { return len(r.Missing) == 0 && len(r.Excess) == 0 })
	if len(r.Missing) > 0 || len(r.Excess) > 0 || !r.OK {
		t.Errorf("missing %v\nexcess %v\nok %v; want nothing missing, no excess, ok", needString(r.Missing), r.Excess, r.OK)
	}
	if r.Identity != in.User || !slices.Contains(r.Groups, "system:serviceaccounts:"+in.Namespace) {
		t.Errorf("identity %q groups %v, want %s in system:serviceaccounts:%s", r.Identity, r.Groups, in.User, in.Namespace)
	}
	for _, want := range []string{
		"get /openapi/v3",
		"list secrets in namespace " + app,
		"list deployments.apps in namespace " + app,
		"list mutatingwebhookconfigurations.admissionregistration.k8s.io cluster-wide",
		"list namespaces cluster-wide",
		"list horizontalpodautoscalers.autoscaling in namespace " + app,
		"list applications.argoproj.io in namespace argocd",
		"list appprojects.argoproj.io in namespace argocd",
		"get configmaps/argocd-cm in namespace argocd",
		"get configmaps/" + in.State + " in namespace " + in.Namespace,
		"update configmaps/" + in.State + " in namespace " + in.Namespace,
	} {
		if !slices.ContainsFunc(r.Needed, func(n Need) bool { return n.String() == want }) {
			t.Errorf("needed does not have %q:\n%v", want, needString(r.Needed))
		}
	}
}

func TestMissingListOnSecretsIsNamedWithTheAppThatNeedsIt(t *testing.T) {
	app := env.Namespace(t, nil)
	in := doctortest.InstallChart(t, env, `
rbac:
  scope: namespaces
  rules: [{apiGroups: ["", "apps", "autoscaling"], resources: [configmaps, services, deployments, horizontalpodautoscalers]}]
  namespaces: [`+app+`]
`)
	in.EventuallyCan(t, "list", "apps", "deployments", app, "")
	opts := DefaultOptions()
	opts.Resources = webResources(t, app)
	opts.State = &ObjectRef{Namespace: in.Namespace, Name: in.State}

	r := check(t, in.Client, opts, func(r Result) bool { return len(r.Missing) == 1 })
	want := []Need{{Verb: "list", Resource: "secrets", Namespace: app, Why: "the app web declares a Secret there"}}
	if diff := cmp.Diff(want, r.Missing); diff != "" {
		t.Errorf("missing (-want +got):\n%s", diff)
	}
	if got, want := r.Missing[0].String(), "list secrets in namespace "+app; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if r.OK || len(r.Excess) > 0 {
		t.Errorf("ok %v excess %v, want not ok and no excess", r.OK, r.Excess)
	}
}

func TestWritesTheScanDoesNotNeedAreWarnedAbout(t *testing.T) {
	in := doctortest.InstallChart(t, env, ``)
	app := env.Namespace(t, nil)
	// envtest has no "edit" ClusterRole: make one, and bind it in the app's
	// namespace only.
	edit := in.Namespace + "-edit"
	env.DeleteRBACAtEnd(t, "ClusterRole", edit)
	env.Create(t, "kubectl", "", cluster.Object(t, `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: `+edit+`}
rules:
- apiGroups: [""]
  resources: [configmaps, secrets]
  verbs: [get, list, create, update, patch, delete]
- apiGroups: [apps]
  resources: [deployments]
  verbs: [get, list, create, update, patch, delete]
`))
	in.BindClusterRole(t, app, edit)
	in.EventuallyCan(t, "delete", "apps", "deployments", app, "")
	// Delete on pods everywhere, and update on every ConfigMap where only the
	// state ConfigMap needs it.
	in.Grant(t, "", "pod-deleter", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"delete"}})
	in.Grant(t, in.Namespace, "state-too-wide", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"update"}})

	opts := DefaultOptions()
	opts.Resources = webResources(t, app)
	opts.State = &ObjectRef{Namespace: in.Namespace, Name: in.State}
	r := check(t, in.Client, opts, func(r Result) bool { return len(r.Excess) == 14 })

	never := func(verb, res string) string {
		return `remove "` + verb + `" on ` + res + ` from the Role or ClusterRole a RoleBinding in ` + app + ` grants`
	}
	want := []Grant{
		{Verb: "delete", Resource: "pods", Fix: `remove "delete" on pods from the ClusterRole a ClusterRoleBinding grants`},
		{Verb: "update", Resource: "configmaps", Namespace: in.Namespace, Fix: "add resourceNames: [" + in.State + "] to the rule; the scan updates no other configmaps here"},
	}
	for _, res := range [][2]string{{"", "configmaps"}, {"apps", "deployments"}, {"", "secrets"}} {
		for _, verb := range []string{"create", "update", "patch", "delete"} {
			want = append(want, Grant{Verb: verb, Group: res[0], Resource: res[1], Namespace: app, Fix: never(verb, qualified(res[0], res[1]))})
		}
	}
	sortGrants(want)
	if diff := cmp.Diff(want, r.Excess); diff != "" {
		t.Errorf("excess (-want +got):\n%s", diff)
	}
	if len(r.Missing) > 0 || !r.OK {
		t.Errorf("missing %v, want none", needString(r.Missing))
	}
}

func TestAClusterAdminIsWarnedOnceAboutEverything(t *testing.T) {
	app := env.Namespace(t, nil)
	opts := DefaultOptions()
	opts.Resources = webResources(t, app)
	r := check(t, env.Client, opts, func(Result) bool { return true })
	want := []Grant{{Verb: "*", Group: "*", Resource: "*",
		Fix: `replace verbs ["*"] on *.* with get and list in the ClusterRole a ClusterRoleBinding grants (or bind a narrower one)`}}
	if diff := cmp.Diff(want, r.Excess); diff != "" {
		t.Errorf("excess (-want +got):\n%s", diff)
	}
	if len(r.Missing) > 0 || !r.OK {
		t.Errorf("missing %v, want none", needString(r.Missing))
	}
}

// TestTheChartsLeaseIsExactlyWhatTheScanNeeds checks the Lease the chart
// creates next to the state ConfigMap: get and update by name are needed
// (the scan defaults the Lease to the state's name) and nothing else; a
// Lease of another name is not even readable.
func TestTheChartsLeaseIsExactlyWhatTheScanNeeds(t *testing.T) {
	in := doctortest.InstallChart(t, env, ``)
	opts := DefaultOptions()
	opts.State = &ObjectRef{Namespace: in.Namespace, Name: in.State}
	r := check(t, in.Client, opts, func(r Result) bool { return len(r.Missing) == 0 })
	if len(r.Missing) > 0 || len(r.Excess) > 0 || !r.OK {
		t.Errorf("chart lease: missing %v excess %v", needString(r.Missing), r.Excess)
	}

	opts.Lease = &ObjectRef{Namespace: in.Namespace, Name: "another-lease"}
	r = check(t, in.Client, opts, func(Result) bool { return true })
	lease := "leases.coordination.k8s.io"
	// The chart reads Leases by name only, so another name lacks get too
	// (and without get, whether it exists and needs create is unknown).
	want := []string{
		"get " + lease + "/another-lease in namespace " + in.Namespace + ": the scan reads who holds the Lease that keeps two runs from notifying at once",
		"update " + lease + "/another-lease in namespace " + in.Namespace + ": the scan takes the Lease before it notifies and gives it back after",
	}
	if diff := cmp.Diff(want, needString(r.Missing)); diff != "" {
		t.Errorf("missing for a Lease the chart does not make (-want +got):\n%s", diff)
	}
}

func TestOptionalNeedsDoNotFailTheCheck(t *testing.T) {
	app := env.Namespace(t, nil)
	in := doctortest.InstallChart(t, env, `
rbac:
  scope: namespaces
  rules: [{apiGroups: ["", "apps"], resources: [configmaps, services, deployments]}]
  secrets: true
  namespaces: [`+app+`]
`)
	in.EventuallyCan(t, "list", "apps", "deployments", app, "")
	opts := DefaultOptions()
	opts.Resources = webResources(t, app)
	r := check(t, in.Client, opts, func(r Result) bool { return len(r.Missing) == 1 })
	want := []Need{{Verb: "list", Group: "autoscaling", Resource: "horizontalpodautoscalers", Namespace: app, Optional: true,
		Why: "the scan lists HorizontalPodAutoscalers there to tell fields an autoscaler sets (spec.replicas) from drift"}}
	if diff := cmp.Diff(want, r.Missing); diff != "" {
		t.Errorf("missing (-want +got):\n%s", diff)
	}
	if !r.OK || len(r.MissingRequired()) > 0 {
		t.Errorf("ok %v, want ok: only an optional need is missing", r.OK)
	}
}
