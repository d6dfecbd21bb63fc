package contract

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/calricon/driftscan/report"
)

// Action is what an admission policy does with a change the contract does
// not allow.
type Action string

// The actions, as ValidatingAdmissionPolicyBinding validationActions.
const (
	ActionDeny  Action = "Deny"
	ActionWarn  Action = "Warn"
	ActionAudit Action = "Audit"
)

// ParseActions reads --action: deny, or warn and/or audit, comma-separated.
func ParseActions(s string) ([]Action, error) {
	var out []Action
	for _, part := range strings.Split(s, ",") {
		var a Action
		switch strings.ToLower(strings.TrimSpace(part)) {
		case "deny":
			a = ActionDeny
		case "warn":
			a = ActionWarn
		case "audit":
			a = ActionAudit
		default:
			return nil, fmt.Errorf("action %q: want deny, warn or audit", part)
		}
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	if slices.Contains(out, ActionDeny) && slices.Contains(out, ActionWarn) {
		return nil, fmt.Errorf("action %q: deny and warn together would warn about what is denied anyway; pick one", s)
	}
	return out, nil
}

// Resource is a resource the apps of a contract declare, with the
// subresources that change live state (scale). Status is never drift, so
// status subresources are never matched.
type Resource struct {
	Group, Resource string
	Subresources    []string
}

// ParamsRef names the ConfigMap that records break-glass suspensions, which
// every binding references: its data maps an app name to the namespaces
// (space-separated) its suspension lifts the contract in.
type ParamsRef struct {
	Namespace, Name string
}

// DefaultParams is where breakglass records suspensions for the policies.
var DefaultParams = ParamsRef{Namespace: "driftscan", Name: "driftscan-breakglass"}

// DefaultApplierUsers are the identities of the usual GitOps appliers:
// Argo CD's application controller and Flux's kustomize- and helm-controller
// service accounts, in their default namespaces.
var DefaultApplierUsers = []string{
	"system:serviceaccount:argocd:argocd-application-controller",
	"system:serviceaccount:flux-system:kustomize-controller",
	"system:serviceaccount:flux-system:helm-controller",
}

// AdmissionOptions configure Admission.
type AdmissionOptions struct {
	// Actions are the binding's validationActions; default Deny.
	Actions []Action
	// Params is the break-glass ConfigMap; default DefaultParams.
	Params ParamsRef
	// ApplierUsers are the identities (globs) of the GitOps appliers, always
	// allowed; default DefaultApplierUsers.
	ApplierUsers []string
	// ApplierManagers are the field managers that stand for Git (the
	// config's appliers). Used by anyone else they are class unknown, as in
	// the report.
	ApplierManagers []string
	// Rules classify a request's field manager, first match wins: the
	// config's rules and then the built-in ones, in the classifier's order
	// (classify.Ordered). A manager no rule matches is class unknown.
	Rules []ClassRule
	// Resources are, by contract name, the resources its apps declare. A
	// contract with none gets no policy (Admission says so).
	Resources map[string][]Resource
}

// ClassRule is a classification rule as an admission policy applies it: a
// regular expression (RE2, as in Go and CEL) on the field manager, when
// Subresource is set the request's subresource, and when Users or Groups
// are set (patterns where * matches any run, as in classify.Rule) the
// request's user or one of its groups: at admission the user is always
// known. A rule's operation (Apply or Update) is not checked: admission
// cannot tell them apart.
type ClassRule struct {
	Manager       string
	Subresource   *string
	Users, Groups []string
	Class         report.Class
}

// DefaultAdmissionOptions returns Deny, DefaultParams and
// DefaultApplierUsers.
func DefaultAdmissionOptions() AdmissionOptions {
	return AdmissionOptions{Actions: []Action{ActionDeny}, Params: DefaultParams, ApplierUsers: DefaultApplierUsers}
}

// Policy is one contract's admission policy and its binding.
type Policy struct {
	Contract string
	Policy   *admissionregistrationv1.ValidatingAdmissionPolicy
	Binding  *admissionregistrationv1.ValidatingAdmissionPolicyBinding
}

// Manifests are what `driftscan contract admission` writes.
type Manifests struct {
	// Params is the break-glass ConfigMap the bindings reference, without
	// data: applying it never removes a suspension breakglass recorded.
	Params   *corev1.ConfigMap
	Policies []Policy
	// Skipped says, by contract, why it got no policy.
	Skipped map[string]string
}

// Labels on everything Admission writes.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelContract  = "driftscan.dev/contract"
	// PolicyPrefix starts the name of every policy and binding.
	PolicyPrefix = "driftscan-contract-"
)

// PolicyName is the name of a contract's policy and binding.
func PolicyName(contract string) string { return PolicyPrefix + contract }

// Admission turns each contract into a ValidatingAdmissionPolicy and its
// binding: create, update and patch (server-side apply included) of the
// resources the contract's apps declare, in its namespaces, are judged by
// the contract's allow rules against the request's field manager and user.
// The GitOps appliers, the control plane's own controllers (the
// kube-controller-manager, the scheduler, service accounts in kube-system),
// nodes and the API server itself are always allowed. While an app is
// suspended with breakglass, the rules limited to break-glass apply to its
// objects.
func Admission(cs []Contract, opts AdmissionOptions) (Manifests, error) {
	if err := Validate(cs); err != nil {
		return Manifests{}, err
	}
	if len(opts.Actions) == 0 {
		opts.Actions = []Action{ActionDeny}
	}
	if opts.Params == (ParamsRef{}) {
		opts.Params = DefaultParams
	}
	if opts.ApplierUsers == nil {
		opts.ApplierUsers = DefaultApplierUsers
	}
	for i, r := range opts.Rules {
		if _, err := regexp.Compile(r.Manager); err != nil {
			return Manifests{}, fmt.Errorf("classification rule %d: manager %q: %w", i, r.Manager, err)
		}
	}
	m := Manifests{
		Params: &corev1.ConfigMap{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: opts.Params.Name, Namespace: opts.Params.Namespace,
				Labels: map[string]string{LabelManagedBy: "driftscan"},
				Annotations: map[string]string{"driftscan.dev/purpose": "break-glass suspensions the driftscan contract policies read: " +
					"app name -> namespaces; written by `driftscan breakglass suspend`, removed by resume and at expiry"}},
		},
		Skipped: map[string]string{},
	}
	gen := celGen{opts: opts}
	for _, c := range cs {
		res := opts.Resources[c.Name]
		if len(res) == 0 {
			m.Skipped[c.Name] = "its apps declare no resource in its namespaces"
			continue
		}
		if slices.ContainsFunc(c.Allow, func(r Rule) bool { return ruleExpr(r) == "true" }) {
			m.Skipped[c.Name] = "it allows every change: there is nothing to enforce"
			continue
		}
		m.Policies = append(m.Policies, Policy{Contract: c.Name, Policy: gen.policy(c, res), Binding: binding(c, opts)})
	}
	return m, nil
}

func objectMeta(c Contract) metav1.ObjectMeta {
	meta := metav1.ObjectMeta{Name: PolicyName(c.Name),
		Labels: map[string]string{LabelManagedBy: "driftscan", LabelContract: c.Name}}
	if c.Owner != "" {
		meta.Annotations = map[string]string{"driftscan.dev/owner": c.Owner}
	}
	return meta
}

func binding(c Contract, opts AdmissionOptions) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	actions := make([]admissionregistrationv1.ValidationAction, len(opts.Actions))
	for i, a := range opts.Actions {
		actions[i] = admissionregistrationv1.ValidationAction(a)
	}
	// A missing params ConfigMap lifts nothing and denies nothing: with
	// Deny, the API server would refuse every matched write before the
	// policy's own exemptions are evaluated, the Deployment controller's
	// included. `driftscan contract check` reports a missing ConfigMap.
	notFound := admissionregistrationv1.AllowAction
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: objectMeta(c),
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        PolicyName(c.Name),
			ValidationActions: actions,
			ParamRef: &admissionregistrationv1.ParamRef{
				Name: opts.Params.Name, Namespace: opts.Params.Namespace, ParameterNotFoundAction: &notFound,
			},
		},
	}
}

// resourceRules groups resources by API group, sorted, for the policy's
// matchConstraints.
func resourceRules(res []Resource) []admissionregistrationv1.NamedRuleWithOperations {
	byGroup := map[string][]string{}
	for _, r := range res {
		names := []string{r.Resource}
		for _, s := range r.Subresources {
			if s != "status" {
				names = append(names, r.Resource+"/"+s)
			}
		}
		for _, n := range names {
			if !slices.Contains(byGroup[r.Group], n) {
				byGroup[r.Group] = append(byGroup[r.Group], n)
			}
		}
	}
	groups := make([]string, 0, len(byGroup))
	for g := range byGroup {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	var out []admissionregistrationv1.NamedRuleWithOperations
	for _, g := range groups {
		names := byGroup[g]
		sort.Strings(names)
		out = append(out, admissionregistrationv1.NamedRuleWithOperations{
			RuleWithOperations: admissionregistrationv1.RuleWithOperations{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{g}, APIVersions: []string{"*"}, Resources: names},
			},
		})
	}
	return out
}

// YAML writes the manifests as one multi-document YAML stream: the params
// ConfigMap, then each contract's policy and binding.
func (m Manifests) YAML() ([]byte, error) {
	var b bytes.Buffer
	docs := []any{m.Params}
	for _, p := range m.Policies {
		docs = append(docs, p.Policy, p.Binding)
	}
	for i, d := range docs {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
		if err != nil {
			return nil, fmt.Errorf("write manifest %d: %w", i, err)
		}
		delete(u, "status")
		data, err := yaml.Marshal(u)
		if err != nil {
			return nil, fmt.Errorf("write manifest %d: %w", i, err)
		}
		b.WriteString("---\n")
		b.Write(data)
	}
	return b.Bytes(), nil
}
