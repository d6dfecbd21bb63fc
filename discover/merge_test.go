package discover

import (
	"testing"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/report"
)

func TestMerge(t *testing.T) {
	fromFile := func(name string) config.App { return config.App{Name: name} }
	discovered := func(name, object string) config.App {
		return config.App{Name: name, GitOps: &report.GitOps{Tool: "argocd", Object: object}}
	}
	tests := []struct {
		name       string
		config     []config.App
		discovered []config.App
		want       []string
		err        string
	}{
		{
			name:       "the config file's apps come first, then the discovered ones",
			config:     []config.App{fromFile("legacy")},
			discovered: []config.App{discovered("web", "Application/argocd/web"), discovered("api", "Application/argocd/api")},
			want:       []string{"legacy", "web", "api"},
		},
		{
			name:       "a name in both is an error that names both; the config file's app is kept",
			config:     []config.App{fromFile("web"), fromFile("legacy")},
			discovered: []config.App{discovered("web", "Application/argocd/web"), discovered("api", "Application/argocd/api")},
			want:       []string{"web", "legacy", "api"},
			err:        "app web is in the config file and discovered from Application/argocd/web",
		},
		{
			name:       "two discovered apps of one name",
			discovered: []config.App{discovered("web", "Application/argocd/web"), discovered("web", "Kustomization/flux-system/web")},
			want:       []string{"web"},
			err:        "app web is discovered from Application/argocd/web and discovered from Kustomization/flux-system/web",
		},
		{
			name:   "nothing discovered",
			config: []config.App{fromFile("web")},
			want:   []string{"web"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			apps, err := Merge(tt.config, tt.discovered)
			var got []string
			for _, a := range apps {
				got = append(got, a.Name)
			}
			if d := diff(tt.want, got); d != "" {
				t.Errorf("apps (-want +got):\n%s", d)
			}
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if gotErr != tt.err {
				t.Errorf("error = %q, want %q", gotErr, tt.err)
			}
		})
	}
}
