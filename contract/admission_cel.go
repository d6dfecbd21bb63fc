package contract

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What CEL sees of a request, and what it does not
// (k8s.io/apiserver/pkg/admission/plugin/cel/compile.go, BuildRequestType):
//   - request.userInfo (username, groups): who sends it, as authenticated.
//   - request.options: the CreateOptions, UpdateOptions or PatchOptions of the
//     call, so request.options.fieldManager is the field manager the client
//     named. A client that names none gets a manager derived from its
//     User-Agent, which admission never sees: its class is unknown here.
//   - request.subResource, request.operation (CREATE or UPDATE: a patch and a
//     server-side apply are both UPDATE, or CREATE when apply creates), so a
//     classification rule's operation (Apply or Update) cannot be told apart
//     and is not checked.
//   - object and oldObject (for the scale subresource, the Scale, which has
//     no labels or annotations), namespaceObject, params.
// The field manager is whatever the client says it is: a rule that must hold
// against someone who lies names users or groups.

// Tracking labels and annotations that say which app an object belongs to.
const (
	argoTrackingID    = "argocd.argoproj.io/tracking-id"
	fluxKustomization = "kustomize.toolkit.fluxcd.io/name"
	fluxHelmRelease   = "helm.toolkit.fluxcd.io/name"
	instanceLabel     = "app.kubernetes.io/instance"
)

// alwaysAllowed are the identities of the control plane's own components.
var alwaysAllowed = []string{"system:kube-controller-manager", "system:kube-scheduler", "system:apiserver"}

// celGen writes the CEL of the policies.
type celGen struct {
	opts AdmissionOptions
}

func (g celGen) policy(c Contract, res []Resource) *admissionregistrationv1.ValidatingAdmissionPolicy {
	fail := admissionregistrationv1.Fail
	reason := metav1.StatusReasonForbidden
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: objectMeta(c),
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			ParamKind:     &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: resourceRules(res),
			},
			MatchConditions: []admissionregistrationv1.MatchCondition{
				{Name: "not-gitops-or-control-plane", Expression: "!(" + g.exempt() + ")"},
			},
			Variables: []admissionregistrationv1.Variable{
				{Name: "nsLabels", Expression: "namespaceObject != null && has(namespaceObject.metadata.labels) ? namespaceObject.metadata.labels : {}"},
				// A variable, not a matchCondition: those see no namespaceObject.
				{Name: "covered", Expression: g.covers(c)},
				// Fields that are empty are absent to CEL: read them through has().
				{Name: "sub", Expression: "has(request.subResource) ? request.subResource : ''"},
				{Name: "name", Expression: "has(request.name) ? request.name : ''"},
				{Name: "manager", Expression: "has(request.options) && request.options != null && has(request.options.fieldManager) ? string(request.options.fieldManager) : ''"},
				{Name: "class", Expression: g.class()},
				{Name: "meta", Expression: "request.operation == 'UPDATE' && oldObject != null ? oldObject.metadata : object.metadata"},
				{Name: "labels", Expression: "has(variables.meta.labels) ? variables.meta.labels : {}"},
				{Name: "annotations", Expression: "has(variables.meta.annotations) ? variables.meta.annotations : {}"},
				{Name: "tracking", Expression: trackingExpr()},
				{Name: "app", Expression: appExpr()},
				{Name: "lifted", Expression: "params != null && has(params.data) && (variables.app != '' ? variables.app in params.data : " +
					"params.data.exists(k, request.namespace in params.data[k].split(' ')))"},
				{Name: "allowed", Expression: g.allowed(c)},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression:        "!variables.covered || variables.allowed",
				MessageExpression: g.message(c),
				Message:           "contract " + c.Name + " does not allow this change",
				Reason:            &reason,
			}},
		},
	}
}

// covers is true for a namespace of the contract: a glob, or the selector
// on the namespace's labels.
func (g celGen) covers(c Contract) string {
	var or []string
	for _, ns := range c.Namespaces {
		if literal(ns) {
			or = append(or, "request.namespace == "+celString(ns))
		} else {
			or = append(or, "request.namespace.matches("+celString(globRegexp(ns))+")")
		}
	}
	if s := c.NamespaceSelector; s != nil {
		or = append(or, selectorExpr(*s))
	}
	return strings.Join(or, " || ")
}

// selectorExpr is a label selector on namespaceObject's labels.
func selectorExpr(s Selector) string {
	var and []string
	for _, k := range sortedKeys(s.MatchLabels) {
		and = append(and, fmt.Sprintf("(%[1]s in variables.nsLabels && variables.nsLabels[%[1]s] == %[2]s)", celString(k), celString(s.MatchLabels[k])))
	}
	for _, r := range s.MatchExpressions {
		k := celString(r.Key)
		switch r.Operator {
		case "In":
			and = append(and, fmt.Sprintf("(%[1]s in variables.nsLabels && variables.nsLabels[%[1]s] in %[2]s)", k, celList(r.Values)))
		case "NotIn":
			and = append(and, fmt.Sprintf("!(%[1]s in variables.nsLabels && variables.nsLabels[%[1]s] in %[2]s)", k, celList(r.Values)))
		case "Exists":
			and = append(and, fmt.Sprintf("(%s in variables.nsLabels)", k))
		case "DoesNotExist":
			and = append(and, fmt.Sprintf("!(%s in variables.nsLabels)", k))
		}
	}
	return "(" + strings.Join(and, " && ") + ")"
}

// exempt is true for the GitOps appliers and the control plane.
func (g celGen) exempt() string {
	or := []string{
		"request.userInfo.username in " + celList(alwaysAllowed),
		"request.userInfo.username.startsWith('system:serviceaccount:kube-system:')",
		"request.userInfo.username.startsWith('system:node:')",
		"(has(request.userInfo.groups) && 'system:nodes' in request.userInfo.groups)",
	}
	if m := globsExpr("request.userInfo.username", g.opts.ApplierUsers); m != "" {
		or = append(or, m)
	}
	return strings.Join(or, " || ")
}

// class gives the request's field manager its class with the rules, as the
// report does; a GitOps applier's manager used by anyone else, and a
// manager no rule knows, are unknown.
func (g celGen) class() string {
	var b strings.Builder
	if len(g.opts.ApplierManagers) > 0 {
		fmt.Fprintf(&b, "variables.manager in %s ? 'unknown' : ", celList(g.opts.ApplierManagers))
	}
	for _, r := range g.opts.Rules {
		cond := "variables.manager.matches(" + celString(r.Manager) + ")"
		if r.Subresource != nil {
			cond += " && variables.sub == " + celString(*r.Subresource)
		}
		if len(r.Users) > 0 || len(r.Groups) > 0 {
			var who []string
			for _, u := range r.Users {
				who = append(who, "request.userInfo.username.matches("+celString(starRegexp(u))+")")
			}
			for _, gr := range r.Groups {
				who = append(who, "(has(request.userInfo.groups) && request.userInfo.groups.exists(g, g.matches("+celString(starRegexp(gr))+")))")
			}
			cond += " && (" + strings.Join(who, " || ") + ")"
		}
		fmt.Fprintf(&b, "(%s) ? %s : ", cond, celString(string(r.Class)))
	}
	b.WriteString("'unknown'")
	return b.String()
}

// appExpr names the app an object belongs to from the tracking that Argo CD
// (annotation tracking-id "app:group/kind:ns/name", the app prefixed with
// "namespace_" outside Argo CD's own namespace) and Flux write, else the
// instance label; "" when none is there (always so for a Scale).
func appExpr() string {
	return fmt.Sprintf("variables.tracking != '' ? variables.tracking.substring(variables.tracking.lastIndexOf('_') + 1) : "+
		"%[1]s in variables.labels ? variables.labels[%[1]s] : "+
		"%[2]s in variables.labels ? variables.labels[%[2]s] : "+
		"%[3]s in variables.labels ? variables.labels[%[3]s] : ''",
		celString(fluxKustomization), celString(fluxHelmRelease), celString(instanceLabel))
}

// trackingExpr is the app part of Argo CD's tracking-id annotation, "" when
// there is none.
func trackingExpr() string {
	return fmt.Sprintf("%[1]s in variables.annotations ? variables.annotations[%[1]s].split(':')[0] : ''", celString(argoTrackingID))
}

// allowed is true when a rule of the contract allows the request.
func (g celGen) allowed(c Contract) string {
	var or []string
	for _, r := range c.Allow {
		if e := ruleExpr(r); e != "false" {
			or = append(or, "("+e+")")
		}
	}
	if len(or) == 0 {
		return "false"
	}
	return strings.Join(or, " || ")
}

// ruleExpr is true when the rule allows the request: "true" for a rule
// that allows anything, "false" for one no request can match.
func ruleExpr(r Rule) string {
	var and []string
	if r.Class != AnyClass {
		and = append(and, "variables.class == "+celString(string(r.Class)))
	}
	if r.During == DuringBreakglass {
		and = append(and, "variables.lifted")
	}
	if m := globsExpr("variables.manager", r.Managers); m != "" {
		and = append(and, "("+m+")")
	}
	if len(r.Webhooks) > 0 {
		// A webhook mutates inside someone else's request; no request is a
		// webhook's own.
		return "false"
	}
	if r.Identity() {
		var who []string
		if m := globsExpr("request.userInfo.username", r.Users); m != "" {
			who = append(who, m)
		}
		if len(r.Groups) > 0 {
			who = append(who, "(has(request.userInfo.groups) && request.userInfo.groups.exists(g, "+globsExpr("g", r.Groups)+"))")
		}
		and = append(and, "("+strings.Join(who, " || ")+")")
	}
	if len(and) == 0 {
		return "true"
	}
	return strings.Join(and, " && ")
}

// globsExpr is true when v matches one of the globs.
func globsExpr(v string, globs []string) string {
	var or []string
	var lits []string
	for _, gl := range globs {
		if literal(gl) {
			lits = append(lits, gl)
		} else {
			or = append(or, v+".matches("+celString(globRegexp(gl))+")")
		}
	}
	if len(lits) == 1 {
		or = append([]string{v + " == " + celString(lits[0])}, or...)
	} else if len(lits) > 1 {
		or = append([]string{v + " in " + celList(lits)}, or...)
	}
	return strings.Join(or, " || ")
}

// message says which contract refused, who and what, what the contract
// allows and, when it has rules for break-glass, the command that lifts it.
func (g celGen) message(c Contract) string {
	head := "contract " + c.Name
	if c.Owner != "" {
		head += " (owner " + c.Owner + ")"
	}
	var allows []string
	for _, r := range c.Allow {
		allows = append(allows, r.String())
	}
	msg := celString(head+" does not allow ") + " + request.userInfo.username + " +
		"' (field manager ' + (variables.manager == '' ? 'not named' : variables.manager) + ', class ' + variables.class + ') to ' + " +
		"request.operation.lowerAscii() + ' ' + request.resource.resource + (variables.sub != '' ? '/' + variables.sub : '') + ' ' + request.namespace + '/' + variables.name + " +
		celString("; it allows "+strings.Join(allows, ", "))
	if c.BreakglassRules() {
		msg += " + '. During an incident: driftscan breakglass suspend ' + (variables.app != '' ? variables.app : 'APP') + " +
			celString(` --ttl 1h --reason "INC-..."`)
	}
	return msg
}

// starRegexp is the anchored expression of a classification rule's user or
// group pattern, where only * is a wildcard (classify.Rule's globs).
func starRegexp(p string) string {
	return "^" + strings.ReplaceAll(regexp.QuoteMeta(p), `\*`, ".*") + "$"
}

// celString quotes s as a CEL string literal: Go's escapes are CEL's.
func celString(s string) string { return strconv.Quote(s) }

func celList(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = celString(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
