package charts

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"regexp"
	"strings"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	release "helm.sh/helm/v4/pkg/release/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// chartFiles is the chart, embedded so that any package's tests can render
// it wherever they run.
//
//go:embed all:driftscan
var chartFiles embed.FS

// ChartDir is the chart's folder, relative to this package.
const ChartDir = "driftscan"

// Options say how to render the chart.
type Options struct {
	// ReleaseName and Namespace are the release's, as `helm install -n`.
	ReleaseName string
	Namespace   string
	// Values override the chart's values.yaml, as `-f values.yaml`.
	Values map[string]any
	// KubeVersion is the cluster version the chart is rendered for. Set it:
	// the chart needs 1.24 or newer, and in a test binary Helm's default is
	// v1.20.
	KubeVersion string
}

// DefaultOptions renders release "driftscan" into namespace "driftscan" for
// the Kubernetes version the tests run.
func DefaultOptions() Options {
	return Options{ReleaseName: "driftscan", Namespace: "driftscan", KubeVersion: "v1.37.2"}
}

// Release is the rendered chart.
type Release struct {
	// Manifest is every rendered object, as Helm would apply them.
	Manifest string
	// Notes is the rendered NOTES.txt.
	Notes string
	// Objects are the parsed manifests, in Manifest's order.
	Objects []*unstructured.Unstructured
}

// Load returns the embedded chart.
func Load() (*chart.Chart, error) {
	var files []*archive.BufferedFile
	err := fs.WalkDir(chartFiles, ChartDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := chartFiles.ReadFile(path)
		if err != nil {
			return err
		}
		files = append(files, &archive.BufferedFile{Name: strings.TrimPrefix(path, ChartDir+"/"), Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read chart %s: %w", ChartDir, err)
	}
	ch, err := loader.LoadFiles(files)
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", ChartDir, err)
	}
	return ch, nil
}

// Render renders the chart client-side, values schema validation included,
// without a cluster, as `helm install --dry-run=client` does.
func Render(ctx context.Context, opts Options) (*Release, error) {
	ch, err := Load()
	if err != nil {
		return nil, err
	}
	install := action.NewInstall(action.NewConfiguration(action.ConfigurationSetLogger(slog.DiscardHandler)))
	install.DryRunStrategy = action.DryRunClient
	install.ReleaseName = opts.ReleaseName
	install.Namespace = opts.Namespace
	if opts.KubeVersion != "" {
		kv, err := common.ParseKubeVersion(opts.KubeVersion)
		if err != nil {
			return nil, fmt.Errorf("kube version %q: %w", opts.KubeVersion, err)
		}
		install.KubeVersion = kv
	}
	vals := opts.Values
	if vals == nil {
		vals = map[string]any{}
	}
	out, err := install.RunWithContext(ctx, ch, vals)
	if err != nil {
		return nil, fmt.Errorf("render chart %s as release %q: %w", ChartDir, opts.ReleaseName, err)
	}
	rel, ok := out.(*release.Release)
	if !ok {
		return nil, fmt.Errorf("render chart %s: unexpected release type %T", ChartDir, out)
	}
	r := &Release{Manifest: rel.Manifest, Notes: rel.Info.Notes}
	for _, doc := range docSeparator.Split(rel.Manifest, -1) {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			return nil, fmt.Errorf("parse rendered manifest: %w\n%s", err, doc)
		}
		if len(u.Object) > 0 {
			r.Objects = append(r.Objects, u)
		}
	}
	return r, nil
}

// Find returns the rendered object of kind with name, or nil.
func (r *Release) Find(kind, name string) *unstructured.Unstructured {
	for _, u := range r.Objects {
		if u.GetKind() == kind && u.GetName() == name {
			return u
		}
	}
	return nil
}

// OfKind returns the rendered objects of kind.
func (r *Release) OfKind(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, u := range r.Objects {
		if u.GetKind() == kind {
			out = append(out, u)
		}
	}
	return out
}

// CronJob returns the rendered CronJob, typed.
func (r *Release) CronJob() (*batchv1.CronJob, error) {
	jobs := r.OfKind("CronJob")
	if len(jobs) != 1 {
		return nil, fmt.Errorf("want one CronJob, the chart rendered %d", len(jobs))
	}
	cj := &batchv1.CronJob{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(jobs[0].Object, cj, true); err != nil {
		return nil, fmt.Errorf("CronJob %s: %w", jobs[0].GetName(), err)
	}
	return cj, nil
}

// docSeparator splits a YAML stream into documents, as Helm's
// releaseutil.SplitManifests does, but keeps their order.
var docSeparator = regexp.MustCompile(`(?:^|\s*\n)---\s*`)

// Container returns the scan container of the rendered CronJob.
func (r *Release) Container() (corev1.Container, error) {
	cj, err := r.CronJob()
	if err != nil {
		return corev1.Container{}, err
	}
	cs := cj.Spec.JobTemplate.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		return corev1.Container{}, fmt.Errorf("CronJob %s: want one container, got %d", cj.Name, len(cs))
	}
	return cs[0], nil
}

// Args returns the scan container's args with $(VAR) references expanded
// from vars, the way the kubelet expands them from the container's env (for
// example NAMESPACE and, with shards, JOB_COMPLETION_INDEX); $$ is a literal
// $. A reference to a variable vars lacks is an error, where the kubelet
// would pass it on unexpanded.
func (r *Release) Args(vars map[string]string) ([]string, error) {
	c, err := r.Container()
	if err != nil {
		return nil, err
	}
	out := make([]string, len(c.Args))
	var missing []string
	for i, a := range c.Args {
		out[i] = varRef.ReplaceAllStringFunc(a, func(ref string) string {
			if ref == "$$" {
				return "$"
			}
			name := ref[2 : len(ref)-1]
			v, ok := vars[name]
			if !ok {
				missing = append(missing, name)
			}
			return v
		})
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("args %q refer to %s, which vars lacks", c.Args, strings.Join(missing, ", "))
	}
	return out, nil
}

// varRef matches $(VAR) and $$ in container args.
var varRef = regexp.MustCompile(`\$\$|\$\([A-Za-z_][A-Za-z0-9_]*\)`)

// ScanConfig returns the scan.yaml the chart mounts at /etc/driftscan.
func (r *Release) ScanConfig() (string, error) {
	for _, u := range r.OfKind("ConfigMap") {
		if data, ok, _ := unstructured.NestedString(u.Object, "data", "scan.yaml"); ok {
			return data, nil
		}
	}
	return "", fmt.Errorf("no ConfigMap with scan.yaml among the %d rendered objects", len(r.Objects))
}
