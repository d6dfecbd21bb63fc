package contract

import (
	"fmt"
	"slices"
	"strings"

	"github.com/calricon/driftscan/report"
)

// selfHeal adds a violation to app when it is a GitOps app that reverts live
// changes on its own in a namespace whose contract forbids it: that is how
// the 3 AM hotfix gets undone. The finding sits on the reconciler object
// (the Application, Kustomization or HelmRelease), like an expired
// break-glass suspension.
func selfHeal(app *report.App, cs []Contract, opts Options) error {
	g := app.GitOps
	if g == nil || !g.SelfHeal {
		return nil
	}
	c := forbidding(app, cs, opts)
	if c == nil {
		return nil
	}
	kind, ns, name, ok := splitRef(g.Object)
	if !ok {
		return fmt.Errorf("app %q: reconciler object %q is not kind/namespace/name", app.Name, g.Object)
	}
	path, live, how := selfHealField(g.Tool, kind)
	app.Objects = append(app.Objects, report.Object{
		APIVersion: reconcilerAPIVersion[kind], Kind: kind, Namespace: ns, Name: name, Status: report.StatusDrifted,
		Findings: []report.Finding{{
			Path: path, Type: report.TypeChanged, Class: report.ClassUnknown, Live: live,
			Hint: fmt.Sprintf("contract %s forbids self-heal in %s, and %s: drift there must be alerted, never reverted (%s)",
				c.Name, strings.Join(c.namespaceText(), ", "), how, selfHealFix(g.Tool, kind)),
			Contract: &report.ContractVerdict{Name: c.Name, Verdict: report.VerdictViolation, Rule: "selfHeal: forbidden",
				Reason: fmt.Sprintf("%s %s reverts live changes on its own", kind, ns+"/"+name)},
		}},
	})
	return nil
}

// forbidding returns the contract forbidding self-heal that covers one of
// the app's namespaces: its destination or any of its objects'.
func forbidding(app *report.App, cs []Contract, opts Options) *Contract {
	var nss []string
	if d := opts.Destinations[app.Name]; d != "" {
		nss = append(nss, d)
	}
	for _, o := range app.Objects {
		if o.Namespace != "" && !slices.Contains(nss, o.Namespace) {
			nss = append(nss, o.Namespace)
		}
	}
	for _, ns := range nss {
		if c := For(cs, ns, opts.NamespaceLabels[ns]); c != nil && c.SelfHeal == SelfHealForbidden {
			return c
		}
	}
	return nil
}

// reconcilerAPIVersion is the API version of each reconciler kind discover
// reads.
var reconcilerAPIVersion = map[string]string{
	"Application":   "argoproj.io/v1alpha1",
	"Kustomization": "kustomize.toolkit.fluxcd.io/v1",
	"HelmRelease":   "helm.toolkit.fluxcd.io/v2",
}

// selfHealField names the field that turns self-heal on, its live value,
// and what it does.
func selfHealField(tool, kind string) (path, live, how string) {
	switch kind {
	case "Kustomization":
		return ".spec.suspend", "false", "Flux's kustomize-controller corrects drift at every reconciliation of a Kustomization that is not suspended"
	case "HelmRelease":
		return ".spec.driftDetection.mode", "enabled", "Flux's helm-controller corrects drift with driftDetection.mode enabled"
	}
	return ".spec.syncPolicy.automated.selfHeal", "true", "Argo CD self-heal reverts live changes within seconds"
}

func selfHealFix(tool, kind string) string {
	switch kind {
	case "Kustomization":
		return "suspend it, or move the namespace to a contract that allows self-heal"
	case "HelmRelease":
		return "set spec.driftDetection.mode to warn"
	}
	return "set spec.syncPolicy.automated.selfHeal to false"
}

// splitRef splits kind/namespace/name.
func splitRef(ref string) (kind, ns, name string, ok bool) {
	parts := strings.Split(ref, "/")
	if len(parts) != 3 {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}

// namespaceText says which namespaces a contract covers, for people.
func (c Contract) namespaceText() []string {
	out := slices.Clone(c.Namespaces)
	if s := c.NamespaceSelector; s != nil {
		out = append(out, "namespaces labelled "+s.String())
	}
	return out
}

// String renders the selector the way kubectl -l takes it.
func (s Selector) String() string {
	var parts []string
	for _, k := range sortedKeys(s.MatchLabels) {
		parts = append(parts, k+"="+s.MatchLabels[k])
	}
	for _, r := range s.MatchExpressions {
		switch r.Operator {
		case "In":
			parts = append(parts, r.Key+" in ("+strings.Join(r.Values, ",")+")")
		case "NotIn":
			parts = append(parts, r.Key+" notin ("+strings.Join(r.Values, ",")+")")
		case "Exists":
			parts = append(parts, r.Key)
		case "DoesNotExist":
			parts = append(parts, "!"+r.Key)
		}
	}
	return strings.Join(parts, ",")
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
