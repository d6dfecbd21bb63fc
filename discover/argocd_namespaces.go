package discover

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/gobwas/glob"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
// every namespace is taken as enabled, as before driftscan read it.
type argoAppNamespaces struct {
	patterns []string
	known    bool
}

func (d *discovery) argoAppNamespaces(ctx context.Context, ns string) argoAppNamespaces {
	cm, err := d.client.Resource(configMaps).Namespace(ns).Get(ctx, "argocd-cmd-params-cm", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return argoAppNamespaces{known: true}
	}
	if err != nil {
		return argoAppNamespaces{}
	}
	value, _, _ := unstructured.NestedString(cm.Object, "data", argoAppNamespacesKey)
	var patterns []string
	for p := range strings.SplitSeq(value, ",") {
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
// AppProject's sourceNamespaces: an entry wrapped in slashes is a regular
// expression that may match any part of the value, any other a glob
// (gobwas/glob, no separators). An entry that does not compile in Go
// (Argo CD's regular expressions are .NET's, with lookarounds) matches
// everything: driftscan cannot tell, and would rather scan an app Argo
// CD skips than skip one it syncs.
func argoMatchAny(patterns []string, value string) bool {
	for _, p := range patterns {
		if len(p) > 2 && strings.HasPrefix(p, "/") && strings.HasSuffix(p, "/") {
			re, err := regexp.Compile(p[1 : len(p)-1])
			if err != nil || re.MatchString(value) {
				return true
			}
			continue
		}
		g, err := glob.Compile(p)
		if err != nil || g.Match(value) {
			return true
		}
	}
	return false
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
