// Package doctor checks the identity a scan runs as against what the scan
// needs: every get and list it makes, and the few writes it makes to its own
// state ConfigMap and Lease. It names each permission that is missing, with
// the reason the scan needs it, and warns about write permissions the
// identity holds but the scan never uses, so an over-privileged
// ServiceAccount can be shrunk.
//
// It asks the API server only through access reviews
// (https://kubernetes.io/docs/reference/access-authn-authz/authorization/#checking-api-access):
// a SelfSubjectReview for who the identity is, a SelfSubjectAccessReview per
// permission the scan needs, a SelfSubjectRulesReview per namespace the scan
// touches (and a ServiceAccount's own namespace) for the writes it holds
// there, and SelfSubjectAccessReviews at cluster scope for writes granted in
// every namespace. Every authenticated identity may create these (the
// bootstrap ClusterRole system:basic-user).
// The only other reads are a GET of the state ConfigMap and of the Lease, to
// know whether the scan will have to create them.
package doctor

import (
	"context"
	"fmt"
	"sort"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The reconcilers Options.From names.
const (
	FromArgoCD = "argocd"
	FromFlux   = "flux"
)

// Options say what the scan will do. Start from DefaultOptions.
type Options struct {
	// Resources are what the apps declare: each is listed in its namespace.
	// AppResources computes them from a ScanConfig.
	Resources []Resource
	// State is the ConfigMap that keeps what was notified
	// (--state configmap:NAMESPACE/NAME), nil when there is none.
	State *ObjectRef
	// Lease is the Lease the scan takes before it notifies (--lease
	// NAMESPACE/NAME). When nil and State is set, it is the Lease of the
	// state ConfigMap's namespace and name, as driftscan scan defaults it.
	Lease *ObjectRef
	// From is FromArgoCD or FromFlux when apps are discovered from the
	// reconciler's objects (--from), and FromNamespace where those objects
	// live ("" for every namespace).
	From          string
	FromNamespace string
	// ArgoNamespace is Argo CD's own namespace (--argocd-namespace), where
	// its AppProjects and ConfigMaps are read; "" for FromNamespace, else
	// argocd.
	ArgoNamespace string
}

// DefaultOptions returns options for a scan that only reads: no state, no
// Lease, no discovery, and no resources yet.
func DefaultOptions() Options { return Options{} }

// ObjectRef names one object.
type ObjectRef struct {
	Namespace, Name string
}

func (r ObjectRef) String() string { return r.Namespace + "/" + r.Name }

// Resource is a resource the scan lists in one namespace.
type Resource struct {
	// Group is the API group, "" for the core group.
	Group string `json:"group,omitempty"`
	// Resource is the plural resource name, such as deployments.
	Resource string `json:"resource"`
	// Namespace is where its objects are; "" for a cluster-scoped resource,
	// or to list a namespaced one across every namespace.
	Namespace string `json:"namespace,omitempty"`
	// Kind and Apps say, in messages, why the scan reads it: the apps that
	// declare objects of that kind there.
	Kind string   `json:"kind,omitempty"`
	Apps []string `json:"apps,omitempty"`
	// Why, when set, is said instead.
	Why string `json:"why,omitempty"`
}

// String is the resource as kubectl names it: deployments.apps, secrets.
func (r Resource) String() string { return qualified(r.Group, r.Resource) }

func qualified(group, resource string) string {
	if group == "" {
		return resource
	}
	return resource + "." + group
}

// where is "in namespace NS", or "cluster-wide".
func where(ns string) string {
	if ns == "" {
		return "cluster-wide"
	}
	return "in namespace " + ns
}

// Need is one permission the scan needs.
type Need struct {
	Verb string `json:"verb"`
	// Group, Resource, Namespace and Name say what on; Name is empty for
	// every object of the resource, Namespace for cluster-wide.
	Group     string `json:"group,omitempty"`
	Resource  string `json:"resource,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	// Path is a non-resource URL (/openapi/v3), instead of a resource.
	Path string `json:"path,omitempty"`
	// Why says what the scan does with it.
	Why string `json:"why"`
	// Optional needs are ones the scan finishes without, knowing less (Why
	// says what); missing them does not make the Result fail.
	Optional bool `json:"optional,omitempty"`
}

// String is the permission: "list secrets in namespace shop", "get
// configmaps/state in namespace ops", "get /openapi/v3".
func (n Need) String() string {
	if n.Path != "" {
		return n.Verb + " " + n.Path
	}
	res := qualified(n.Group, n.Resource)
	if n.Name != "" {
		res += "/" + n.Name
	}
	return n.Verb + " " + res + " " + where(n.Namespace)
}

// Grant is a write permission the identity holds and the scan does not need.
type Grant struct {
	// Verb is a write verb, or "*".
	Verb string `json:"verb"`
	// Group and Resource may be "*"; Resource may name a subresource
	// (deployments/scale).
	Group    string `json:"group,omitempty"`
	Resource string `json:"resource"`
	// Namespace is empty for a grant in every namespace (and on
	// cluster-scoped resources): a ClusterRoleBinding's.
	Namespace string `json:"namespace,omitempty"`
	// Names are the objects the grant is limited to; empty means all.
	Names []string `json:"names,omitempty"`
	// Fix says, in one line, how to take it away.
	Fix string `json:"fix"`
}

// String is the permission: "delete deployments.apps in namespace shop",
// "update configmaps/a,b in namespace ops", "* *.* cluster-wide".
func (g Grant) String() string {
	res := qualified(g.Group, g.Resource)
	if len(g.Names) > 0 {
		res += "/" + strings.Join(g.Names, ",")
	}
	return g.Verb + " " + res + " " + where(g.Namespace)
}

// Result is what Check found.
type Result struct {
	// Identity is the user name the API server sees, and Groups its groups.
	Identity string   `json:"identity"`
	Groups   []string `json:"groups,omitempty"`
	// Needed is every permission checked, in the order the scan uses them.
	Needed []Need `json:"needed"`
	// Missing are the needed permissions the identity lacks.
	Missing []Need `json:"missing"`
	// Excess are the write permissions it holds that the scan does not
	// need: in the namespaces the scan touches and a ServiceAccount's own,
	// and cluster-wide.
	Excess []Grant `json:"excess"`
	// Notes are what the API server could not fully answer, such as a rules
	// review another authorizer made incomplete.
	Notes []string `json:"notes,omitempty"`
	// OK is true when nothing but optional needs is missing: the scan can
	// run as this identity.
	OK bool `json:"ok"`
}

// MissingRequired returns the missing needs the scan cannot do without.
func (r Result) MissingRequired() []Need {
	var out []Need
	for _, n := range r.Missing {
		if !n.Optional {
			out = append(out, n)
		}
	}
	return out
}

// Check asks the API server, as the identity client authenticates as,
// which of the permissions opts imply it holds, and which writes it holds
// beyond them. It returns an error when it cannot ask (the cluster is not
// reachable, access reviews are refused); a permission that is denied is a
// Result, not an error.
func Check(ctx context.Context, client kubernetes.Interface, opts Options) (Result, error) {
	var r Result
	if opts.Lease == nil && opts.State != nil {
		lease := *opts.State
		opts.Lease = &lease
	}
	who, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return r, fmt.Errorf("ask who the identity is (SelfSubjectReview): %w", err)
	}
	r.Identity, r.Groups = who.Status.UserInfo.Username, who.Status.UserInfo.Groups

	c := &checker{client: client, opts: opts, allowed: map[authorizationv1.ResourceAttributes]bool{}}
	if ns, _, ok := strings.Cut(strings.TrimPrefix(r.Identity, serviceAccountPrefix), ":"); ok && strings.HasPrefix(r.Identity, serviceAccountPrefix) {
		// A ServiceAccount's Roles are most often in its own namespace.
		c.ownNamespace = ns
	}
	needs, err := c.needs(ctx)
	if err != nil {
		return r, err
	}
	for _, n := range needs {
		r.Needed = append(r.Needed, n)
		ok, err := c.can(ctx, n)
		if err != nil {
			return r, err
		}
		if ok {
			continue
		}
		if n.Verb == "list" && n.Group == "" && n.Resource == "namespaces" {
			// The scan gets each namespace when it may not list them.
			for _, ns := range c.namespaces(false) {
				g := Need{Verb: "get", Resource: "namespaces", Name: ns, Optional: true,
					Why: "the scan reads the labels of namespace " + ns + " to match webhook namespaceSelectors (it lists namespaces, or gets each when it may not list them)"}
				ok, err := c.can(ctx, g)
				if err != nil {
					return r, err
				}
				if !ok {
					r.Missing = append(r.Missing, g)
				}
			}
			continue
		}
		r.Missing = append(r.Missing, n)
	}
	r.Excess, r.Notes, err = c.excess(ctx)
	if err != nil {
		return r, err
	}
	r.OK = len(r.MissingRequired()) == 0
	return r, nil
}

// checker is one Check call.
type checker struct {
	client kubernetes.Interface
	opts   Options
	// allowed remembers every access review's answer.
	allowed map[authorizationv1.ResourceAttributes]bool
	// ownNamespace is a ServiceAccount identity's namespace.
	ownNamespace string
}

// serviceAccountPrefix starts the user name of a ServiceAccount:
// system:serviceaccount:NAMESPACE:NAME.
const serviceAccountPrefix = "system:serviceaccount:"

// can asks the API server whether the identity may do n.
func (c *checker) can(ctx context.Context, n Need) (bool, error) {
	spec := authorizationv1.SelfSubjectAccessReviewSpec{}
	if n.Path != "" {
		spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: n.Path, Verb: n.Verb}
	} else {
		attrs := authorizationv1.ResourceAttributes{Verb: n.Verb, Group: n.Group, Resource: n.Resource, Namespace: n.Namespace, Name: n.Name}
		if ok, seen := c.allowed[attrs]; seen {
			return ok, nil
		}
		spec.ResourceAttributes = &attrs
	}
	ok, err := c.review(ctx, spec)
	if err != nil {
		return false, fmt.Errorf("access review %s: %w", n, err)
	}
	if spec.ResourceAttributes != nil {
		c.allowed[*spec.ResourceAttributes] = ok
	}
	return ok, nil
}

func (c *checker) review(ctx context.Context, spec authorizationv1.SelfSubjectAccessReviewSpec) (bool, error) {
	res, err := c.client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return res.Status.Allowed && !res.Status.Denied, nil
}

// namespaces returns, sorted, the namespaces the apps' objects are in, and
// with all also those of the state, the Lease, the reconciler objects and a
// ServiceAccount identity.
func (c *checker) namespaces(all bool) []string {
	set := map[string]bool{}
	for _, r := range c.opts.Resources {
		if r.Namespace != "" {
			set[r.Namespace] = true
		}
	}
	if all {
		for _, ref := range []*ObjectRef{c.opts.State, c.opts.Lease} {
			if ref != nil && ref.Namespace != "" {
				set[ref.Namespace] = true
			}
		}
		if c.opts.From != "" && c.opts.FromNamespace != "" {
			set[c.opts.FromNamespace] = true
		}
		if c.ownNamespace != "" {
			set[c.ownNamespace] = true
		}
	}
	out := make([]string, 0, len(set))
	for ns := range set {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}
