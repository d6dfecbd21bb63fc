package doctor

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Argo CD's AppProjects and ConfigMaps are read in its own namespace
// (--argocd-namespace), also when the Applications are listed in every
// namespace (-A), which alone reads argocd-cmd-params-cm.
func TestArgoCDsReadsAreInItsOwnNamespace(t *testing.T) {
	for _, tt := range []struct {
		from, argo string
		want       []string
	}{
		{"argocd", "", []string{
			"list applications.argoproj.io in namespace argocd",
			"list appprojects.argoproj.io in namespace argocd",
			"get configmaps/argocd-cm in namespace argocd",
		}},
		{"", "gitops", []string{
			"list applications.argoproj.io cluster-wide",
			"list appprojects.argoproj.io in namespace gitops",
			"get configmaps/argocd-cm in namespace gitops",
			"get configmaps/argocd-cmd-params-cm in namespace gitops",
		}},
	} {
		c := &checker{opts: Options{From: FromArgoCD, FromNamespace: tt.from, ArgoNamespace: tt.argo}}
		var got []string
		for _, n := range c.fromNeeds() {
			got = append(got, n.String())
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("--argocd-namespace %q, Applications in %q (-want +got):\n%s", tt.argo, tt.from, d)
		}
	}
}
