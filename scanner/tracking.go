package scanner

import (
	"strings"

	"github.com/calricon/driftscan/classify"
	"github.com/calricon/driftscan/config"
)

// trackingOf says what the reconcilers write on an app's objects: from the
// Argo CD Application or Flux object the app was discovered from, else
// after the app's own name. release is the Helm release the app renders,
// "" when it renders no chart.
func trackingOf(app config.App, release string) classify.Tracking {
	t := classify.Tracking{ArgoApps: []string{app.Name}, FluxName: app.Name, HelmRelease: release, HelmNamespace: app.Namespace}
	if g := app.GitOps; g != nil {
		kind, rest, _ := strings.Cut(g.Object, "/")
		ns, name, _ := strings.Cut(rest, "/")
		switch g.Tool {
		case "argocd":
			// Argo CD writes <namespace>_<name> for an Application outside
			// its own namespace: discovery says which; for an app of a
			// config, which the scan does not know, both match.
			t.ArgoApps = []string{name, ns + "_" + name}
			if app.ArgoInstance != "" {
				t.ArgoApps = []string{app.ArgoInstance}
			}
			t.FluxName = ""
			t.ArgoLabel = app.ArgoLabelTracking
			t.ArgoLabelKey = app.ArgoInstanceLabel
			t.ArgoInstallationID = app.ArgoInstallationID
		case "flux":
			t.ArgoApps = nil
			t.FluxKind, t.FluxName, t.FluxNamespace = kind, name, ns
		}
	}
	return t
}
