package discover

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dlclark/regexp2"

	"github.com/calricon/driftscan/config"
)

// argoAppNamespacesKey is the key of argocd-cmd-params-cm that enables
// Applications outside Argo CD's own namespace (apps in any namespace):
// upstream's manifests hand it to the application controller as
// $ARGOCD_APPLICATION_NAMESPACES (--application-namespaces).
const argoAppNamespacesKey = "application.namespaces"

// argoAppNamespaces are the namespaces whose Applications the Argo CD of
// namespace ns reconciles besides its own: the patterns of
// argocd-cmd-params-cm's application.namespaces, none when the ConfigMap
// or the key is absent (Argo CD's default). known is false when the
// ConfigMap cannot be read (the scan's identity may not get it): then
// every namespace is taken as enabled, with a warning.
type argoAppNamespaces struct {
	patterns []string
	known    bool
}

func (d *discovery) argoAppNamespaces(ctx context.Context, ns string) argoAppNamespaces {
	_, data, err := settingsConfigMap(ctx, d.client, ns, "argocd-cmd-params-cm")
	if err != nil {
		d.settingsUnreadable("ConfigMap/"+ns+"/argocd-cmd-params-cm", err, "which namespaces' Applications Argo CD reconciles (%s) is not known, so those of every namespace are scanned, also any Argo CD never syncs", argoAppNamespacesKey)
		return argoAppNamespaces{}
	}
	var patterns []string // none without the ConfigMap or the key
	for p := range strings.SplitSeq(data[argoAppNamespacesKey], ",") {
		if p = strings.TrimSpace(p); p != "" {
			patterns = append(patterns, p)
		}
	}
	return argoAppNamespaces{patterns: patterns, known: true}
}

// refuses says why the Argo CD of namespace argoNS does not reconcile the
// Applications of namespace ns, or "" when it does (the controller's
// isAppNamespaceAllowed: its own namespace, or one application.namespaces
// matches).
func (n argoAppNamespaces) refuses(ns, argoNS string) string {
	if ns == argoNS || !n.known || argoMatchAny(n.patterns, ns) {
		return ""
	}
	if len(n.patterns) == 0 {
		return fmt.Sprintf("Argo CD in namespace %s reconciles no Application outside its own namespace (argocd-cmd-params-cm sets no %s), so it never syncs this one", argoNS, argoAppNamespacesKey)
	}
	return fmt.Sprintf("Argo CD in namespace %s does not reconcile Applications in namespace %s (argocd-cmd-params-cm's %s is %s), so it never syncs this one", argoNS, ns, argoAppNamespacesKey, strings.Join(n.patterns, ","))
}

// argoMatchAny is Argo CD's glob.MatchStringInList in its regexp mode, by
// which it matches namespaces against application.namespaces and an
// AppProject's sourceNamespaces: an entry wrapped in slashes is tried as a
// regular expression (regexp2's, .NET syntax with lookarounds, as Argo CD
// compiles it) that may match any part of the value, and every entry as a
// glob (gobwas/glob, no separators) over the whole value. An entry that
// does not compile matches nothing, as in Argo CD, which logs it and goes
// on; so does a regular expression that has not matched within
// argoMatchTimeout (Argo CD waits forever: driftscan will not hang on a
// pattern a hostile AppProject holds).
func argoMatchAny(patterns []string, value string) bool {
	for _, p := range patterns {
		if len(p) > 2 && strings.HasPrefix(p, "/") && strings.HasSuffix(p, "/") && argoRegexpMatch(p[1:len(p)-1], value) {
			return true
		}
		if config.ArgoGlobMatch(p, value) {
			return true
		}
	}
	return false
}

// argoMatchTimeout bounds one regular expression match of argoMatchAny.
const argoMatchTimeout = time.Second

// argoRegexpMatch is Argo CD's regex.Match: pattern compiled by regexp2
// with no options, false when it does not compile or match.
func argoRegexpMatch(pattern, value string) bool {
	re, err := regexp2.Compile(pattern, regexp2.None)
	if err != nil {
		return false
	}
	re.MatchTimeout = argoMatchTimeout
	ok, err := re.MatchString(value)
	return err == nil && ok
}

// namespacePermitted says why the AppProject project (in Argo CD's
// namespace argoNS) does not let an Application of namespace ns use it,
// or "" when it does: an Application outside argoNS must be in one of the
// project's sourceNamespaces, else Argo CD refuses to reconcile it
// (AppProject.IsAppNamespacePermitted).
func namespacePermitted(projects map[string]*appProject, argoNS, project, ns string) string {
	if ns == argoNS {
		return ""
	}
	if project == "" {
		project = "default"
	}
	p, ok := projects[project]
	if !ok || argoMatchAny(p.Spec.SourceNamespaces, ns) {
		return "" // a missing project is sourcePermitted's to report
	}
	return fmt.Sprintf("AppProject %s/%s does not list namespace %s in its sourceNamespaces, so Argo CD refuses to reconcile this Application and driftscan does not fetch its source", argoNS, project, ns)
}
