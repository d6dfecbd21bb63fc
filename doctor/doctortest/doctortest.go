// Package doctortest installs the chart's ServiceAccount, RBAC and state
// ConfigMap on a test API server, as Helm would, and acts as that
// ServiceAccount by impersonation, for tests of package doctor and of
// `driftscan doctor`.
package doctortest

import (
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/calricon/driftscan/charts"
	"github.com/calricon/driftscan/fixtures/cluster"
)

// Install is the chart installed as a release named after its namespace.
type Install struct {
	// Namespace is the release namespace; Fullname the chart's fullname.
	Namespace, Fullname string
	// ServiceAccount is the scan's ServiceAccount, and User its user name.
	ServiceAccount, User string
	// State is the state ConfigMap's name.
	State string
	// Config and Client act as the ServiceAccount.
	Config *rest.Config
	Client kubernetes.Interface

	env *cluster.Env
}

// InstallChart renders the chart with the values in valuesYAML into a new
// namespace and creates the ServiceAccount, Roles, ClusterRoles, bindings
// and ConfigMaps; cluster-scoped objects are deleted when the test ends.
// It returns once the API server's RBAC authorizer knows the new roles.
func InstallChart(t testing.TB, env *cluster.Env, valuesYAML string) *Install {
	t.Helper()
	env.Need(t)
	ns := env.Namespace(t, nil)
	vals := map[string]any{}
	if err := yaml.Unmarshal([]byte(valuesYAML), &vals); err != nil {
		t.Fatalf("values: %v\n%s", err, valuesYAML)
	}
	opts := charts.DefaultOptions()
	opts.ReleaseName, opts.Namespace, opts.Values = ns, ns, vals
	rel, err := charts.Render(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	cj, err := rel.CronJob()
	if err != nil {
		t.Fatal(err)
	}
	in := &Install{Namespace: ns, Fullname: cj.GetName(), ServiceAccount: cj.Spec.JobTemplate.Spec.Template.Spec.ServiceAccountName, env: env}
	in.User = "system:serviceaccount:" + ns + ":" + in.ServiceAccount
	for _, u := range rel.Objects {
		switch u.GetKind() {
		case "ServiceAccount", "Role", "RoleBinding", "Lease":
			env.Create(t, "helm", "", u)
		case "ConfigMap":
			env.Create(t, "helm", "", u)
			if u.GetLabels()["app.kubernetes.io/component"] == "state" {
				in.State = u.GetName()
			}
		case "ClusterRole", "ClusterRoleBinding":
			env.Create(t, "helm", "", u)
			env.DeleteRBACAtEnd(t, u.GetKind(), u.GetName())
		}
	}
	in.Config = rest.CopyConfig(env.Config)
	in.Config.Impersonate = rest.ImpersonationConfig{UserName: in.User}
	if in.Client, err = kubernetes.NewForConfig(in.Config); err != nil {
		t.Fatal(err)
	}
	in.EventuallyCan(t, "update", "", "configmaps", ns, in.State)
	in.EventuallyCan(t, "list", "", "namespaces", "", "")
	return in
}

// Grant gives the ServiceAccount rules: with ns, a Role and RoleBinding
// there; without, a ClusterRole and ClusterRoleBinding. name must be unique
// among the test's grants. It returns once the authorizer knows the rules.
func (in *Install) Grant(t testing.TB, ns, name string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := t.Context()
	rbac := in.env.Client.RbacV1()
	meta := metav1.ObjectMeta{Name: in.Namespace + "-" + name, Namespace: ns}
	subjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: in.ServiceAccount, Namespace: in.Namespace}}
	var err error
	if ns != "" {
		if _, err = rbac.Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: meta, Rules: rules}, metav1.CreateOptions{}); err == nil {
			_, err = rbac.RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: meta, Subjects: subjects,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: meta.Name}}, metav1.CreateOptions{})
		}
	} else {
		if _, err = rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: meta, Rules: rules}, metav1.CreateOptions{}); err == nil {
			in.env.DeleteRBACAtEnd(t, "ClusterRole", meta.Name)
			_, err = rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: meta, Subjects: subjects,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: meta.Name}}, metav1.CreateOptions{})
			if err == nil {
				in.env.DeleteRBACAtEnd(t, "ClusterRoleBinding", meta.Name)
			}
		}
	}
	if err != nil {
		t.Fatalf("grant %s: %v", name, err)
	}
	r := rules[0]
	res := r.Resources[0]
	rname := ""
	if len(r.ResourceNames) > 0 {
		rname = r.ResourceNames[0]
	}
	in.EventuallyCan(t, r.Verbs[0], r.APIGroups[0], res, ns, rname)
}

// BindClusterRole binds the existing ClusterRole role to the ServiceAccount
// in namespace ns (a RoleBinding), or everywhere when ns is empty (a
// ClusterRoleBinding).
func (in *Install) BindClusterRole(t testing.TB, ns, role string) {
	t.Helper()
	ctx := t.Context()
	rbac := in.env.Client.RbacV1()
	meta := metav1.ObjectMeta{Name: in.Namespace + "-" + role, Namespace: ns}
	subjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: in.ServiceAccount, Namespace: in.Namespace}}
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}
	var err error
	if ns != "" {
		_, err = rbac.RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: meta, Subjects: subjects, RoleRef: ref}, metav1.CreateOptions{})
	} else {
		_, err = rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: meta, Subjects: subjects, RoleRef: ref}, metav1.CreateOptions{})
		if err == nil {
			in.env.DeleteRBACAtEnd(t, "ClusterRoleBinding", meta.Name)
		}
	}
	if err != nil {
		t.Fatalf("bind ClusterRole %s: %v", role, err)
	}
}

// Can asks the API server whether the ServiceAccount may do verb.
func (in *Install) Can(t testing.TB, verb, group, resource, ns, name string) bool {
	t.Helper()
	review, err := in.Client.AuthorizationV1().SelfSubjectAccessReviews().Create(t.Context(), &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: verb, Group: group, Resource: resource, Namespace: ns, Name: name,
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("access review %s %s.%s %s/%s: %v", verb, resource, group, ns, name, err)
	}
	return review.Status.Allowed
}

// EventuallyCan waits until the ServiceAccount may do verb: the RBAC
// authorizer learns of new roles through an informer.
func (in *Install) EventuallyCan(t testing.TB, verb, group, resource, ns, name string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !in.Can(t, verb, group, resource, ns, name) {
		if time.Now().After(deadline) {
			t.Fatalf("%s still may not %s %s.%s %s/%s after 30s", in.User, verb, resource, group, ns, name)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
