package charts

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// access is one request the ServiceAccount could make.
type access struct {
	verb, group, resource, subresource, ns, name string
}

func (a access) String() string {
	res := a.resource
	if a.subresource != "" {
		res += "/" + a.subresource
	}
	if a.group != "" {
		res += "." + a.group
	}
	if a.name != "" {
		res += " " + a.name
	}
	where := "cluster-wide"
	if a.ns != "" {
		where = "in " + a.ns
	}
	return a.verb + " " + res + " " + where
}

// allows asks the API server's authorizer, with a SubjectAccessReview sent
// as the admin, whether the chart's ServiceAccount may make each request.
// The ServiceAccount's groups are those the API server gives every token of
// it, so the roles bound to system:authenticated count too.
func (r *installed) allows(t *testing.T, reqs []access) map[access]bool {
	t.Helper()
	user := "system:serviceaccount:" + r.ns + ":" + r.saName
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + r.ns, "system:authenticated"}
	out := make(map[access]bool, len(reqs))
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		next = make(chan access)
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for a := range next {
				review, err := env.Client.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), &authorizationv1.SubjectAccessReview{
					Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &authorizationv1.ResourceAttributes{
						Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.subresource, Namespace: a.ns, Name: a.name,
					}},
				}, metav1.CreateOptions{})
				if err != nil {
					t.Errorf("SubjectAccessReview %s: %v", a, err)
					continue
				}
				mu.Lock()
				out[a] = review.Status.Allowed
				mu.Unlock()
			}
		}()
	}
	for _, a := range reqs {
		next <- a
	}
	close(next)
	wg.Wait()
	return out
}

// servedResources lists every resource and subresource the API server
// serves, from discovery.
func servedResources(t *testing.T) (resources, subresources []schema.GroupVersionResource) {
	t.Helper()
	env.Need(t)
	_, lists, err := env.Client.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, res := range l.APIResources {
			key := gv.Group + "/" + res.Name
			if seen[key] {
				continue
			}
			seen[key] = true
			gvr := gv.WithResource(res.Name)
			if strings.Contains(res.Name, "/") {
				subresources = append(subresources, gvr)
			} else {
				resources = append(resources, gvr)
			}
		}
	}
	return resources, subresources
}

// everyAuthenticatedUser are the requests the API server's default roles
// allow any authenticated identity: asking about the caller's own rights
// (system:basic-user), which writes nothing, and watching the public
// ClusterTrustBundles.
var everyAuthenticatedUser = map[string]string{
	"selfsubjectaccessreviews.authorization.k8s.io": "create",
	"selfsubjectrulesreviews.authorization.k8s.io":  "create",
	"selfsubjectreviews.authentication.k8s.io":      "create",
	"clustertrustbundles.certificates.k8s.io":       "watch",
}

// allowedWrite reports whether the chart may grant a: get and update on its
// state ConfigMaps and Leases by name, and with autoResume get and patch
// on the reconciler objects breakglass suspends.
func (r *installed) allowedWrite(a access, autoResume bool) bool {
	if a.subresource == "" && everyAuthenticatedUser[a.resource+"."+a.group] == a.verb {
		return true
	}
	if a.subresource != "" {
		return false
	}
	state := (a.group == "" && a.resource == "configmaps") || (a.group == "coordination.k8s.io" && a.resource == "leases")
	if state && a.verb == "update" && a.ns == r.ns && slices.Contains(r.states(), a.name) {
		return true
	}
	resume := map[string]bool{"applications.argoproj.io": true, "kustomizations.kustomize.toolkit.fluxcd.io": true, "helmreleases.helm.toolkit.fluxcd.io": true}
	return autoResume && a.verb == "patch" && resume[a.resource+"."+a.group]
}

// checkNoSubresourceAndNoWrite asks the authorizer about every subresource
// the API server serves (get, list, create, update, patch, delete: a
// WebSocket exec is a GET) and every write verb on every resource, in the
// release namespace, another namespace and cluster-wide, and about the
// state objects by name. Only the state writes (and, with autoResume, the
// resume patches) may be allowed.
func (r *installed) checkNoSubresourceAndNoWrite(t *testing.T, otherNS string, autoResume bool) {
	t.Helper()
	resources, subresources := servedResources(t)
	for _, want := range []string{"pods/exec", "pods/attach", "pods/portforward", "pods/proxy", "nodes/proxy", "services/proxy", "pods/log", "serviceaccounts/token"} {
		if !slices.ContainsFunc(subresources, func(g schema.GroupVersionResource) bool { return g.Resource == want }) {
			t.Fatalf("the API server does not serve %s: discovery %v", want, subresources)
		}
	}
	var reqs []access
	nss := []string{r.ns, otherNS, ""}
	for _, gvr := range subresources {
		res, sub, _ := strings.Cut(gvr.Resource, "/")
		for _, verb := range []string{"get", "list", "create", "update", "patch", "delete"} {
			for _, ns := range nss {
				reqs = append(reqs, access{verb: verb, group: gvr.Group, resource: res, subresource: sub, ns: ns})
			}
		}
	}
	writes := []string{"create", "update", "patch", "delete", "deletecollection", "watch", "impersonate", "escalate", "bind", "approve", "sign"}
	for _, gvr := range append(resources, schema.GroupVersionResource{Group: "argoproj.io", Resource: "applications"},
		schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Resource: "kustomizations"},
		schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Resource: "helmreleases"}) {
		for _, verb := range writes {
			for _, ns := range nss {
				reqs = append(reqs, access{verb: verb, group: gvr.Group, resource: gvr.Resource, ns: ns})
			}
		}
	}
	for _, name := range append(r.states(), r.fullname+"-config", "another") {
		for _, gr := range [][2]string{{"", "configmaps"}, {"coordination.k8s.io", "leases"}} {
			for _, verb := range append([]string{"get"}, writes...) {
				reqs = append(reqs, access{verb: verb, group: gr[0], resource: gr[1], ns: r.ns, name: name})
			}
		}
	}
	allowed := r.allows(t, reqs)
	var wrong []string
	for _, a := range reqs {
		want := r.allowedWrite(a, autoResume)
		if a.name != "" && a.verb == "get" {
			// Reading the state is needed; reading the config ConfigMap or
			// another one is a plain read (granted by rbac.rules in
			// scope cluster), not a write.
			continue
		}
		if allowed[a] != want {
			wrong = append(wrong, fmt.Sprintf("%s: allowed %v, want %v", a, allowed[a], want))
		}
	}
	for _, name := range r.states() {
		for _, gr := range [][2]string{{"", "configmaps"}, {"coordination.k8s.io", "leases"}} {
			if a := (access{verb: "get", group: gr[0], resource: gr[1], ns: r.ns, name: name}); !allowed[a] {
				wrong = append(wrong, a.String()+": denied, want allowed (the scan reads its state)")
			}
		}
	}
	slices.Sort(wrong)
	if len(wrong) > 0 {
		t.Errorf("%d of %d access reviews are wrong:\n%s", len(wrong), len(reqs), strings.Join(wrong, "\n"))
	}
	t.Logf("%d SubjectAccessReviews (%d subresources, %d resources served)", len(reqs), len(subresources), len(resources))
}

// TestTheDefaultRBACGrantsNoSubresourceAndNoWrite is the regression test of
// `resources: ["*"]`, which let the ServiceAccount pass authorization for
// `kubectl exec` (a WebSocket GET on pods/exec), attach, port-forward and
// the node and service proxies exactly as cluster-admin does.
func TestTheDefaultRBACGrantsNoSubresourceAndNoWrite(t *testing.T) {
	r := install(t, ``)
	other := env.Namespace(t, nil)
	r.checkNoSubresourceAndNoWrite(t, other, false)

	got := r.allows(t, []access{
		{verb: "get", resource: "secrets", ns: other, name: "web-db"},
		{verb: "list", resource: "secrets", ns: other},
		{verb: "list", resource: "secrets"},
		{verb: "list", group: "apps", resource: "deployments"},
		{verb: "list", resource: "configmaps", ns: other},
		{verb: "list", group: "argoproj.io", resource: "applications", ns: other},
	})
	for a, ok := range got {
		if want := a.resource != "secrets"; ok != want {
			t.Errorf("%s: allowed %v, want %v", a, ok, want)
		}
	}
}

// TestOptInsGrantOnlyWhatTheyName: rbac.secrets adds reading Secrets and
// nothing else; autoResume adds get and patch on the reconciler objects and
// no other write.
func TestOptInsGrantOnlyWhatTheyName(t *testing.T) {
	r := install(t, `{autoResume: true, rbac: {secrets: true}}`)
	other := env.Namespace(t, nil)
	r.eventuallyCan(t, "patch", "argoproj.io", "applications", other, "")
	r.checkNoSubresourceAndNoWrite(t, other, true)
	got := r.allows(t, []access{
		{verb: "list", resource: "secrets", ns: other},
		{verb: "get", resource: "secrets", ns: other, name: "web-db"},
		{verb: "get", group: "argoproj.io", resource: "applications", ns: other, name: "web"},
		{verb: "patch", group: "helm.toolkit.fluxcd.io", resource: "helmreleases", ns: other, name: "web"},
	})
	for a, ok := range got {
		if !ok {
			t.Errorf("%s: denied, want allowed", a)
		}
	}
}

// TestNamespacesScopeGrantsNoSubresourceAndNoWrite: the same with Roles in
// named namespaces.
func TestNamespacesScopeGrantsNoSubresourceAndNoWrite(t *testing.T) {
	team := env.Namespace(t, nil)
	r := install(t, fmt.Sprintf(`{rbac: {scope: namespaces, namespaces: [%s]}}`, team))
	r.eventuallyCan(t, "list", "apps", "deployments", team, "")
	r.checkNoSubresourceAndNoWrite(t, team, false)
}
