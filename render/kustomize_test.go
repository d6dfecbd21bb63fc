package render

import (
	"context"
	"strings"
	"testing"

	"github.com/calricon/driftscan/config"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestRenderKustomize(t *testing.T) {
	tests := []struct {
		name   string
		dir    string
		want   []renderedObject
		fields map[string]any
	}{{
		name: "an overlay prefixes names, labels everything and patches the base",
		dir:  "kustomize/overlays/prod",
		want: []renderedObject{
			{File: ".", ID: "apps/v1 Deployment prod-web"},
			{File: ".", ID: "v1 Service prod-web"},
		},
		fields: map[string]any{
			"Deployment spec.replicas":                         int64(3),
			"Deployment metadata.labels.env":                   "prod",
			"Deployment spec.selector.matchLabels.env":         "prod",
			"Deployment spec.template.metadata.labels.env":     "prod",
			"Service spec.selector.env":                        "prod",
			"Deployment spec.template.spec.containers.0.image": "nginx:1.26",
		},
	}, {
		name: "a base renders unchanged",
		dir:  "kustomize/base",
		want: []renderedObject{
			{File: ".", ID: "apps/v1 Deployment web"},
			{File: ".", ID: "v1 Service web"},
		},
		fields: map[string]any{
			"Deployment spec.replicas":                         int64(1),
			"Deployment metadata.labels.env":                   nil,
			"Deployment spec.template.spec.containers.0.image": "nginx:1.25",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Manifests(context.Background(), Options{Dir: renderFixture(t, tt.dir), Root: renderFixture(t, "."), Kustomize: &config.KustomizeSource{}})
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if diff := cmp.Diff(tt.want, renderSummary(got)); diff != "" {
				t.Errorf("rendered objects (-want +got):\n%s", diff)
			}
			byKind := map[string]*unstructured.Unstructured{}
			for _, m := range got {
				byKind[m.Object.GetKind()] = m.Object
			}
			for field, want := range tt.fields {
				kind, path, _ := strings.Cut(field, " ")
				if diff := cmp.Diff(want, helmField(byKind[kind], path)); diff != "" {
					t.Errorf("%s (-want +got):\n%s", field, diff)
				}
			}
		})
	}
}

func TestRenderKustomizeErrorNamesTheFolder(t *testing.T) {
	dir := renderFixture(t, "kustomize/broken")
	ms, err := Manifests(context.Background(), Options{Dir: dir})
	if err == nil {
		t.Fatalf("Manifests() = %d manifests, want an error", len(ms))
	}
	if want := "kustomize " + dir + ": "; !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("Manifests() error = %q, want it to start with %q and name missing.yaml", err, want)
	}
	if len(ms) != 0 {
		t.Errorf("Manifests() returned %d manifests with the error, want none", len(ms))
	}
}
