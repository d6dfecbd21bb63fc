package doctor

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// writeVerbs are the verbs that change objects, or hand out the power to:
// the ones Excess reports. "*" is every verb.
var writeVerbs = []string{"*", "create", "update", "patch", "delete", "deletecollection", "escalate", "bind", "impersonate"}

// benign are the writes every authenticated identity holds through the
// bootstrap ClusterRole system:basic-user: asking who it is and what it may
// do. doctor needs them itself.
var benign = map[[3]string]bool{
	{"create", "authorization.k8s.io", "selfsubjectaccessreviews"}: true,
	{"create", "authorization.k8s.io", "selfsubjectrulesreviews"}:  true,
	{"create", "authentication.k8s.io", "selfsubjectreviews"}:      true,
}

// clusterProbes are the writes asked about at cluster scope whatever the
// rules reviews showed: those that hurt most when a ClusterRoleBinding
// grants them, and "*" on everything (cluster-admin).
var clusterProbes = func() []Grant {
	out := []Grant{{Verb: "*", Group: "*", Resource: "*"}}
	for _, r := range [][2]string{
		{"", "secrets"}, {"", "configmaps"}, {"", "pods"}, {"", "serviceaccounts"}, {"", "namespaces"},
		{"apps", "deployments"}, {"coordination.k8s.io", "leases"},
		{"rbac.authorization.k8s.io", "roles"}, {"rbac.authorization.k8s.io", "rolebindings"},
		{"rbac.authorization.k8s.io", "clusterroles"}, {"rbac.authorization.k8s.io", "clusterrolebindings"},
		{"admissionregistration.k8s.io", "mutatingwebhookconfigurations"},
		{"apiextensions.k8s.io", "customresourcedefinitions"},
	} {
		for _, v := range []string{"create", "update", "patch", "delete"} {
			out = append(out, Grant{Verb: v, Group: r[0], Resource: r[1]})
		}
	}
	return append(out,
		Grant{Verb: "create", Resource: "pods/exec"},
		Grant{Verb: "create", Resource: "serviceaccounts/token"},
		Grant{Verb: "escalate", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
		Grant{Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
		Grant{Verb: "impersonate", Resource: "users"},
		Grant{Verb: "impersonate", Resource: "groups"},
		Grant{Verb: "impersonate", Resource: "serviceaccounts"},
	)
}()

// neededWrite is a write the scan makes: Name limits it to one object;
// empty, it needs no name (create).
type neededWrite struct {
	verb, group, resource, namespace, name string
}

// neededWrites are the writes of the state ConfigMap and the Lease. Create
// is counted as needed in their namespaces even when they exist: the state
// store creates a ConfigMap to keep a corrupt state aside, and a Lease
// deleted by hand is created again.
func (c *checker) neededWrites() []neededWrite {
	var out []neededWrite
	if ref := c.opts.State; ref != nil {
		out = append(out,
			neededWrite{"update", "", "configmaps", ref.Namespace, ref.Name},
			neededWrite{"create", "", "configmaps", ref.Namespace, ""})
	}
	if ref := c.opts.Lease; ref != nil {
		out = append(out,
			neededWrite{"update", "coordination.k8s.io", "leases", ref.Namespace, ref.Name},
			neededWrite{"create", "coordination.k8s.io", "leases", ref.Namespace, ""})
	}
	return out
}

// beyondNeed returns the part of a write grant the scan does not need: nil
// and false when it needs all of it; the names it does not need (nil for
// every name) and the names it does, when it needs some.
func (c *checker) beyondNeed(verb, group, resource, ns string, names []string) (extra, needed []string, excess bool) {
	for _, w := range c.neededWrites() {
		if w.verb != verb || w.group != group || w.resource != resource || w.namespace != ns {
			continue
		}
		if w.name == "" {
			return nil, nil, false
		}
		needed = append(needed, w.name)
	}
	if len(needed) == 0 {
		return names, nil, true
	}
	if len(names) == 0 {
		return nil, needed, true
	}
	for _, n := range names {
		if !slices.Contains(needed, n) {
			extra = append(extra, n)
		}
	}
	if len(extra) == 0 {
		return nil, nil, false
	}
	return extra, needed, true
}

// candidate is a write grant seen in the rules reviews.
type candidate struct {
	grant      Grant // without Namespace
	namespaces []string
	needed     map[string][]string // by namespace: the names the scan writes
}

// excess finds the write grants the scan does not need: from a rules review
// of each namespace the scan touches, each asked about again at cluster
// scope to tell a ClusterRoleBinding's grant (reported once) from a
// RoleBinding's, and from clusterProbes.
func (c *checker) excess(ctx context.Context) ([]Grant, []string, error) {
	var notes []string
	found := map[string]*candidate{}
	var order []string
	for _, ns := range c.namespaces(true) {
		review, err := c.client.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{
			Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns},
		}, metav1.CreateOptions{})
		if err != nil {
			return nil, nil, fmt.Errorf("rules review of namespace %s (SelfSubjectRulesReview): %w", ns, err)
		}
		if review.Status.Incomplete {
			note := "the rules review of namespace " + ns + " is incomplete: writes another authorizer grants are not shown"
			if e := review.Status.EvaluationError; e != "" {
				note += " (" + e + ")"
			}
			notes = append(notes, note)
		}
		for _, rule := range review.Status.ResourceRules {
			for _, verb := range rule.Verbs {
				if !slices.Contains(writeVerbs, verb) {
					continue
				}
				for _, group := range rule.APIGroups {
					for _, resource := range rule.Resources {
						if verb == "create" && benign[[3]string{verb, group, resource}] {
							continue
						}
						names, needed, ok := c.beyondNeed(verb, group, resource, ns, rule.ResourceNames)
						if !ok {
							continue
						}
						g := Grant{Verb: verb, Group: group, Resource: resource, Names: names}
						key := grantKey(g)
						cand := found[key]
						if cand == nil {
							cand = &candidate{grant: g, needed: map[string][]string{}}
							found[key] = cand
							order = append(order, key)
						}
						if !slices.Contains(cand.namespaces, ns) {
							cand.namespaces = append(cand.namespaces, ns)
						}
						if len(needed) > 0 {
							cand.needed[ns] = needed
						}
					}
				}
			}
		}
	}

	var cluster, namespaced []Grant
	for _, key := range order {
		cand := found[key]
		g := cand.grant
		everywhere, err := c.clusterWide(ctx, g)
		if err != nil {
			return nil, nil, err
		}
		if everywhere {
			g.Fix = fix(g, nil)
			if len(cand.needed) > 0 {
				g.Fix = clusterFixNeeded(g, cand.needed)
			}
			cluster = append(cluster, g)
			continue
		}
		for _, ns := range cand.namespaces {
			ng := g
			ng.Namespace = ns
			ng.Fix = fix(ng, cand.needed[ns])
			namespaced = append(namespaced, ng)
		}
	}
	for _, p := range clusterProbes {
		if covered(p, cluster) {
			continue
		}
		everywhere, err := c.clusterWide(ctx, p)
		if err != nil {
			return nil, nil, err
		}
		if everywhere {
			p.Fix = fix(p, nil)
			cluster = append(cluster, p)
		}
	}
	var out []Grant
	for _, g := range cluster {
		if !covered(g, without(cluster, g)) {
			out = append(out, g)
		}
	}
	for _, g := range namespaced {
		if !covered(g, cluster) && !covered(g, without(namespaced, g)) {
			out = append(out, g)
		}
	}
	sortGrants(out)
	return out, notes, nil
}

// clusterWide asks whether g is granted in every namespace (for a
// cluster-scoped resource: at all) by a ClusterRoleBinding.
func (c *checker) clusterWide(ctx context.Context, g Grant) (bool, error) {
	attrs := authorizationv1.ResourceAttributes{Verb: g.Verb, Group: g.Group}
	attrs.Resource, attrs.Subresource, _ = strings.Cut(g.Resource, "/")
	if len(g.Names) > 0 {
		attrs.Name = g.Names[0]
	}
	ok, err := c.review(ctx, authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs})
	if err != nil {
		return false, fmt.Errorf("access review %s: %w", g, err)
	}
	return ok, nil
}

func grantKey(g Grant) string {
	return g.Verb + " " + g.Group + " " + g.Resource + " " + strings.Join(g.Names, ",")
}

// covered reports whether one of by, in every namespace (Namespace "") or
// in g's, grants all that g grants, and more.
func covered(g Grant, by []Grant) bool {
	for _, h := range by {
		if h.Namespace != "" && h.Namespace != g.Namespace {
			continue
		}
		if len(h.Names) > 0 && !subset(g.Names, h.Names) {
			continue
		}
		if (h.Verb == "*" || h.Verb == g.Verb) && (h.Group == "*" || h.Group == g.Group) && (h.Resource == "*" || h.Resource == g.Resource) {
			return true
		}
	}
	return false
}

// subset reports whether every name of a is in b; no names means all.
func subset(a, b []string) bool {
	if len(a) == 0 {
		return false
	}
	for _, n := range a {
		if !slices.Contains(b, n) {
			return false
		}
	}
	return true
}

// without returns gs without the grants equal to g.
func without(gs []Grant, g Grant) []Grant {
	var out []Grant
	for _, h := range gs {
		if grantKey(h) != grantKey(g) || h.Namespace != g.Namespace {
			out = append(out, h)
		}
	}
	return out
}

// fix says in one line how to take g away. needed are the names the scan
// writes, when it writes some objects of g's resource there.
func fix(g Grant, needed []string) string {
	res := qualified(g.Group, g.Resource)
	switch {
	case len(needed) > 0 && len(g.Names) == 0:
		return fmt.Sprintf("add resourceNames: [%s] to the rule; the scan %ss no other %s here", strings.Join(needed, ", "), g.Verb, res)
	case len(needed) > 0:
		return fmt.Sprintf("remove %s from the rule's resourceNames; the scan %ss only %s/%s here", strings.Join(g.Names, ", "), g.Verb, res, strings.Join(needed, ", "))
	case g.Verb == "*" && g.Namespace == "":
		return fmt.Sprintf("replace verbs [\"*\"] on %s with get and list in the ClusterRole a ClusterRoleBinding grants (or bind a narrower one)", res)
	case g.Verb == "*":
		return fmt.Sprintf("replace verbs [\"*\"] on %s with get and list in the Role or ClusterRole a RoleBinding in %s grants", res, g.Namespace)
	case g.Namespace == "":
		return fmt.Sprintf("remove %q on %s from the ClusterRole a ClusterRoleBinding grants", g.Verb, res)
	}
	return fmt.Sprintf("remove %q on %s from the Role or ClusterRole a RoleBinding in %s grants", g.Verb, res, g.Namespace)
}

// clusterFixNeeded is the fix of a grant in every namespace that the scan
// needs for some objects in some namespaces.
func clusterFixNeeded(g Grant, needed map[string][]string) string {
	res := qualified(g.Group, g.Resource)
	var here []string
	for _, ns := range slices.Sorted(maps.Keys(needed)) {
		here = append(here, fmt.Sprintf("%s/%s in namespace %s", res, strings.Join(needed[ns], ","), ns))
	}
	return fmt.Sprintf("grant %q on %s with a Role and RoleBinding there instead of a ClusterRoleBinding; the scan needs no more", g.Verb, strings.Join(here, " and "))
}

// sortGrants orders cluster-wide grants first, then by namespace, resource
// and verb.
func sortGrants(gs []Grant) {
	sort.SliceStable(gs, func(i, j int) bool {
		a, b := gs[i], gs[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if ra, rb := qualified(a.Group, a.Resource), qualified(b.Group, b.Resource); ra != rb {
			return ra < rb
		}
		if va, vb := slices.Index(writeVerbs, a.Verb), slices.Index(writeVerbs, b.Verb); va != vb {
			return va < vb
		}
		return strings.Join(a.Names, ",") < strings.Join(b.Names, ",")
	})
}
