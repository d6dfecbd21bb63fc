package render

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/bounded"
	"github.com/calricon/driftscan/fixtures/reconcilers"
)

// argoRepo is a kustomization as Applications override it: it names an
// image, a replica count, a label and a patch of its own.
var argoRepo = map[string]string{
	"apps/web/kustomization.yaml": `resources: [deploy.yaml, cm.yaml]
images:
- {name: nginx, newName: mirror/nginx, newTag: "1.25"}
- {name: busybox, newTag: "1.36"}
replicas:
- {name: web, count: 1}
commonLabels: {team: shop}
labels:
- pairs: {tier: web}
patches:
- target: {kind: ConfigMap}
  patch: |-
    - op: add
      path: /data/patched
      value: by-git
`,
	"apps/web/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 5
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: nginx}
      - {name: side, image: busybox}
      - {name: tool, image: alpine:3.19}
      - {name: app, image: registry.example.com/app:1}
`,
	"apps/web/cm.yaml":                    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: b}\n",
	"components/audit/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\ncommonAnnotations: {audited: \"yes\"}\n",
}

// TestArgoKustomizeOverridesAgreeWithKustomizeEdit applies an
// Application's spec.source.kustomize in process and as Argo CD does
// (argo-cd util/kustomize Build: the real `kustomize edit` commands in a
// copy of the repository, patches appended to the file, then `kustomize
// build`), and compares every object; what kustomize edit refuses is
// refused here too.
func TestArgoKustomizeOverridesAgreeWithKustomizeEdit(t *testing.T) {
	assets, err := reconcilers.Assets("kustomize")
	if err != nil {
		t.Fatalf("the real kustomize: %v", err)
	}
	kustomize := filepath.Join(assets, "kustomize")
	digest := "sha256:" + strings.Repeat("b", 64)
	tests := []struct {
		name  string
		ak    config.ArgoKustomize
		fails bool
	}{{
		name: "every override",
		ak: config.ArgoKustomize{NamePrefix: "prod-", NameSuffix: "-eu", Namespace: "shop",
			Images:            []string{"nginx=*:1.27", "busybox:*", "alpine@" + digest, "registry.example.com/app=registry.example.com/app:2"},
			Replicas:          []config.KustomizeReplica{{Name: "web", Count: 3}},
			CommonLabels:      map[string]string{"env": "prod", "region": "eu"},
			CommonAnnotations: map[string]string{"owner": "platform"},
			Patches:           []map[string]any{{"target": map[string]any{"kind": "Deployment"}, "patch": "- op: add\n  path: /metadata/annotations/patched\n  value: by-argo\n"}},
			Components:        []string{"../../components/audit", "../../components/missing"}, IgnoreMissingComponents: true,
		},
	}, {
		name: "labels without selectors, into templates",
		ak:   config.ArgoKustomize{CommonLabels: map[string]string{"env": "prod", "tier": "front"}, LabelWithoutSelector: true, LabelIncludeTemplates: true, ForceCommonLabels: true},
	}, {
		name: "a label the kustomization has, forced",
		ak:   config.ArgoKustomize{CommonLabels: map[string]string{"team": "payments"}, ForceCommonLabels: true},
	}, {
		name:  "a label the kustomization has, not forced",
		ak:    config.ArgoKustomize{CommonLabels: map[string]string{"team": "payments"}},
		fails: true,
	}, {
		name:  "replicas of a workload the kustomization has not",
		ak:    config.ArgoKustomize{Replicas: []config.KustomizeReplica{{Name: "worker", Count: 2}}},
		fails: true,
	}, {
		name:  "a missing component",
		ak:    config.ArgoKustomize{Components: []string{"../../components/missing"}},
		fails: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ours, theirs := t.TempDir(), t.TempDir()
			writeTree(t, ours, argoRepo)
			writeTree(t, theirs, argoRepo)
			want, editErr := argoCDBuild(t, kustomize, filepath.Join(theirs, "apps/web"), &tt.ak)
			ak := tt.ak
			got, err := Manifests(context.Background(), Options{Dir: filepath.Join(ours, "apps/web"), Root: ours, Kustomize: &config.KustomizeSource{Argo: &ak}})
			if tt.fails {
				if editErr == nil {
					t.Fatalf("kustomize took overrides this case expects it to refuse")
				}
				if err == nil {
					t.Fatalf("the render took overrides kustomize refuses (%v)", editErr)
				}
				return
			}
			if editErr != nil {
				t.Fatalf("kustomize: %v", editErr)
			}
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			if diff := cmp.Diff(byIdentity(want), byIdentity(objectsOf(got))); diff != "" {
				t.Errorf("objects (-argo cd's kustomize edit and build +render):\n%s", diff)
			}
		})
	}
}

// argoCDBuild does what Argo CD's kustomize Build does with ak in dir.
func argoCDBuild(t *testing.T, kustomize, dir string, ak *config.ArgoKustomize) ([]map[string]any, error) {
	t.Helper()
	run := func(args ...string) ([]byte, error) {
		cmd := bounded.Command(bounded.Limits{Memory: 2 << 30, Time: 60 * time.Second}, kustomize, args...)
		cmd.Dir = dir
		cmd.Env = append(cmd.Env, "HOME="+t.TempDir())
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, &editError{args: args, err: err, stderr: stderr.String()}
		}
		return out, nil
	}
	pairs := func(m map[string]string) []string {
		var out []string
		for k, v := range m {
			out = append(out, k+":"+v)
		}
		slices.Sort(out)
		return out
	}
	var steps [][]string
	if ak.NamePrefix != "" {
		steps = append(steps, []string{"edit", "set", "nameprefix", "--", ak.NamePrefix})
	}
	if ak.NameSuffix != "" {
		steps = append(steps, []string{"edit", "set", "namesuffix", "--", ak.NameSuffix})
	}
	if len(ak.Images) > 0 {
		steps = append(steps, append([]string{"edit", "set", "image"}, ak.Images...))
	}
	if len(ak.Replicas) > 0 {
		args := []string{"edit", "set", "replicas"}
		for _, r := range ak.Replicas {
			args = append(args, r.Name+"="+strconv.FormatInt(r.Count, 10))
		}
		steps = append(steps, args)
	}
	if len(ak.CommonLabels) > 0 {
		args := []string{"edit", "add", "label"}
		if ak.ForceCommonLabels {
			args = append(args, "--force")
		}
		if ak.LabelWithoutSelector {
			args = append(args, "--without-selector")
		}
		if ak.LabelIncludeTemplates {
			args = append(args, "--include-templates")
		}
		steps = append(steps, append(args, pairs(ak.CommonLabels)...))
	}
	if len(ak.CommonAnnotations) > 0 {
		steps = append(steps, append([]string{"edit", "add", "annotation"}, pairs(ak.CommonAnnotations)...))
	}
	if ak.Namespace != "" {
		steps = append(steps, []string{"edit", "set", "namespace", "--", ak.Namespace})
	}
	for _, s := range steps {
		if _, err := run(s...); err != nil {
			return nil, err
		}
	}
	if len(ak.Patches) > 0 {
		// There is no kustomize edit for patches: Argo CD appends them to
		// the file itself.
		file := filepath.Join(dir, "kustomization.yaml")
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var k map[string]any
		if err := sigsyaml.Unmarshal(data, &k); err != nil {
			t.Fatal(err)
		}
		patches, _ := k["patches"].([]any)
		for _, p := range ak.Patches {
			patches = append(patches, p)
		}
		k["patches"] = patches
		if data, err = sigsyaml.Marshal(k); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if len(ak.Components) > 0 {
		found := ak.Components
		if ak.IgnoreMissingComponents {
			found = nil
			for _, c := range ak.Components {
				if _, err := os.Stat(filepath.Join(dir, c)); err == nil {
					found = append(found, c)
				}
			}
		}
		if len(found) > 0 {
			if _, err := run(append([]string{"edit", "add", "component"}, found...)...); err != nil {
				return nil, err
			}
		}
	}
	out, err := run("build", ".")
	if err != nil {
		return nil, err
	}
	return yamlObjects(t, out), nil
}

type editError struct {
	args   []string
	err    error
	stderr string
}

func (e *editError) Error() string {
	return "kustomize " + strings.Join(e.args, " ") + ": " + e.err.Error() + ": " + e.stderr
}
