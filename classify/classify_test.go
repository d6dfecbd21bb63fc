package classify

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/calricon/driftscan/report"
)

// recordedCase is one case of testdata/cases.yaml.
type recordedCase struct {
	Name    string `yaml:"name"`
	Entries []struct {
		Manager     string `yaml:"manager"`
		Operation   string `yaml:"operation"`
		Subresource string `yaml:"subresource"`
		Time        string `yaml:"time"`
	} `yaml:"entries"`
	Webhooks []string `yaml:"webhooks"`
	Scalers  []struct {
		Kind string `yaml:"kind"`
		Name string `yaml:"name"`
	} `yaml:"scalers"`
	Appliers []string `yaml:"appliers"`
	Rules    []Rule   `yaml:"rules"`
	Change   struct {
		Path   string      `yaml:"path"`
		Type   report.Type `yaml:"type"`
		Owner  string      `yaml:"owner"`
		NewKey bool        `yaml:"newKey"`
		Git    string      `yaml:"git"`
		Live   string      `yaml:"live"`
		// InLastApplied: the path is in the last-applied configuration.
		InLastApplied bool `yaml:"inLastApplied"`
	} `yaml:"change"`
	Want struct {
		Drift       bool         `yaml:"drift"`
		Class       report.Class `yaml:"class"`
		Manager     string       `yaml:"manager"`
		Operation   string       `yaml:"operation"`
		Subresource string       `yaml:"subresource"`
		Time        string       `yaml:"time"`
		Actor       string       `yaml:"actor"`
		Hint        string       `yaml:"hint"`
		// HintLacks is text the hint must not hold.
		HintLacks string `yaml:"hintLacks"`
	} `yaml:"want"`
}

func loadCases(t testing.TB) []recordedCase {
	t.Helper()
	data, err := os.ReadFile("testdata/cases.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cases []recordedCase
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&cases); err != nil {
		t.Fatal(err)
	}
	return cases
}

// build turns a case into the classifier's input.
func (c recordedCase) build(t testing.TB) (*Classifier, Object, Change) {
	appliers := c.Appliers
	if appliers == nil {
		appliers = []string{"argocd-controller"}
	}
	cl, err := New(Options{Appliers: appliers, Rules: c.Rules})
	if err != nil {
		t.Fatal(err)
	}
	o := Object{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Name: "web", Webhooks: c.Webhooks}
	for _, s := range c.Scalers {
		o.Scalers = append(o.Scalers, Scaler{Kind: s.Kind, Name: s.Name})
	}
	ch := Change{Path: c.Change.Path, Type: c.Change.Type, NewKey: c.Change.NewKey, Git: c.Change.Git, Live: c.Change.Live, InLastApplied: c.Change.InLastApplied}
	for _, e := range c.Entries {
		entry := Entry{Manager: e.Manager, Operation: e.Operation, Subresource: e.Subresource}
		if e.Time != "" {
			tm, err := time.Parse(time.RFC3339, e.Time)
			if err != nil {
				t.Fatal(err)
			}
			entry.Time = tm
		}
		o.Entries = append(o.Entries, entry)
		if e.Manager == c.Change.Owner {
			ch.Owner = &entry
		}
	}
	return cl, o, ch
}

func TestClassifyRecordedManagedFields(t *testing.T) {
	for _, c := range loadCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			cl, o, ch := c.build(t)
			res := cl.Classify(o, ch)
			if res.Drift != c.Want.Drift {
				t.Fatalf("drift = %v, want %v (finding %+v)", res.Drift, c.Want.Drift, res.Finding)
			}
			if !res.Drift {
				return
			}
			f := res.Finding
			got := []string{string(f.Class), f.Manager, f.Actor}
			want := []string{string(c.Want.Class), c.Want.Manager, c.Want.Actor}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("class, manager, actor (-want +got):\n%s", diff)
			}
			if c.Want.Operation != "" && f.Operation != c.Want.Operation {
				t.Errorf("operation = %q, want %q", f.Operation, c.Want.Operation)
			}
			if f.Subresource != c.Want.Subresource {
				t.Errorf("subresource = %q, want %q", f.Subresource, c.Want.Subresource)
			}
			if c.Want.Time != "" && f.Time != c.Want.Time {
				t.Errorf("time = %q, want %q", f.Time, c.Want.Time)
			}
			if !strings.Contains(f.Hint, c.Want.Hint) {
				t.Errorf("hint = %q, want it to contain %q", f.Hint, c.Want.Hint)
			}
			if c.Want.HintLacks != "" && strings.Contains(f.Hint, c.Want.HintLacks) {
				t.Errorf("hint = %q, want it without %q", f.Hint, c.Want.HintLacks)
			}
			if f.Path != ch.Path || f.Type != ch.Type || f.Git != ch.Git || f.Live != ch.Live {
				t.Errorf("the finding changed the change's path, type or values: %+v", f)
			}
		})
	}
}

func TestBuiltinRulesCoverTheDocumentedManagers(t *testing.T) {
	cl, err := New(Options{Appliers: []string{"argocd-controller"}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		entry Entry
		want  report.Class
	}{
		{Entry{Manager: "kubectl-edit", Operation: "Update"}, report.ClassHuman},
		{Entry{Manager: "kubectl-patch", Operation: "Update"}, report.ClassHuman},
		{Entry{Manager: "kubectl-label", Operation: "Update"}, report.ClassHuman},
		{Entry{Manager: "kubectl-annotate", Operation: "Update"}, report.ClassHuman},
		{Entry{Manager: "kubectl-replace", Operation: "Update"}, report.ClassHuman},
		{Entry{Manager: "kubectl-create", Operation: "Update"}, report.ClassHuman},
		{Entry{Manager: "kubectl", Operation: "Update", Subresource: "scale"}, report.ClassHuman},
		{Entry{Manager: "Mozilla", Operation: "Update"}, report.ClassHuman},
		{Entry{Manager: "k9s", Operation: "Update"}, report.ClassHuman},
		{Entry{Manager: "lens", Operation: "Update"}, report.ClassHuman},
		{Entry{Manager: "headlamp", Operation: "Update"}, report.ClassHuman},
		{Entry{Manager: "kubectl-set", Operation: "Update"}, report.ClassPipeline},
		{Entry{Manager: "kubectl-rollout", Operation: "Update"}, report.ClassPipeline},
		{Entry{Manager: "kubectl-client-side-apply", Operation: "Update"}, report.ClassPipeline},
		{Entry{Manager: "kubectl", Operation: "Apply"}, report.ClassPipeline},
		{Entry{Manager: "helm", Operation: "Update"}, report.ClassPipeline},
		{Entry{Manager: "argo-rollouts", Operation: "Update"}, report.ClassPipeline},
		{Entry{Manager: "flagger", Operation: "Update"}, report.ClassPipeline},
		{Entry{Manager: "release-pipeline", Operation: "Apply"}, report.ClassPipeline},
		{Entry{Manager: "ci-deployer", Operation: "Update"}, report.ClassPipeline},
		{Entry{Manager: "jenkins", Operation: "Update"}, report.ClassPipeline},
		{Entry{Manager: "tekton-pipelines-controller", Operation: "Update"}, report.ClassPipeline},
		{Entry{Manager: "gitlab-runner", Operation: "Update"}, report.ClassPipeline},
		{Entry{Manager: "github-actions", Operation: "Update"}, report.ClassPipeline},
		{Entry{Manager: "kube-controller-manager", Operation: "Update", Subresource: "scale"}, report.ClassOperator},
		{Entry{Manager: "kube-scheduler", Operation: "Update"}, report.ClassOperator},
		{Entry{Manager: "cluster-autoscaler", Operation: "Update"}, report.ClassOperator},
		{Entry{Manager: "vpa-updater", Operation: "Update"}, report.ClassOperator},
		{Entry{Manager: "keda-operator", Operation: "Update"}, report.ClassOperator},
		{Entry{Manager: "cert-manager-cainjector", Operation: "Update"}, report.ClassOperator},
		{Entry{Manager: "strimzi-cluster-operator", Operation: "Update"}, report.ClassOperator},
		{Entry{Manager: "my-controller", Operation: "Update"}, report.ClassOperator},
		{Entry{Manager: "foo-controller-manager", Operation: "Update"}, report.ClassOperator},
		{Entry{Manager: "payments-hotfix.sh", Operation: "Update"}, report.ClassUnknown},
	}
	for _, c := range cases {
		if got := cl.ClassOf(c.entry); got != c.want {
			t.Errorf("%s %s %s: class %s, want %s", c.entry.Manager, c.entry.Operation, c.entry.Subresource, got, c.want)
		}
	}
}

func TestInvalidRulesAreRejectedWithTheirProblem(t *testing.T) {
	sub := ""
	cases := []struct {
		rule Rule
		want string
	}{
		{Rule{Manager: "(", Class: report.ClassHuman}, "manager \"(\""},
		{Rule{Manager: "x", Operation: "Patch", Class: report.ClassHuman}, "operation \"Patch\""},
		{Rule{Manager: "x", Class: "robot"}, "class \"robot\""},
		{Rule{Manager: "x", Subresource: &sub, Class: report.ClassPipeline}, ""},
	}
	for _, c := range cases {
		err := c.rule.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v", c.rule, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: error %v, want %q", c.rule, err, c.want)
		}
	}
}

func BenchmarkClassifyFinding(b *testing.B) {
	cases := loadCases(b)
	type input struct {
		cl *Classifier
		o  Object
		ch Change
	}
	var inputs []input
	for _, c := range cases {
		cl, o, ch := c.build(b)
		inputs = append(inputs, input{cl, o, ch})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		in := inputs[i%len(inputs)]
		_ = in.cl.Classify(in.o, in.ch)
	}
}

// BenchmarkClassifyObject classifies the findings of a typical drifted
// Deployment: an image, replicas, an env var, an injected sidecar and
// annotation, and a default.
func BenchmarkClassifyObject(b *testing.B) {
	cl, err := New(Options{Appliers: []string{"argocd-controller"}})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	set := Entry{Manager: "kubectl-set", Operation: "Update", Time: now}
	patch := Entry{Manager: "kubectl-patch", Operation: "Update", Time: now}
	hpa := Entry{Manager: "kube-controller-manager", Operation: "Update", Subresource: "scale", Time: now}
	o := Object{Kind: "Deployment", Entries: []Entry{{Manager: "argocd-controller", Operation: "Apply", Time: now}, set, patch, hpa},
		Webhooks: []string{"istio-sidecar-injector"}, Scalers: []Scaler{{Kind: "HorizontalPodAutoscaler", Name: "web"}}}
	changes := []Change{
		{Path: `.spec.template.spec.containers[name="app"].image`, Type: report.TypeChanged, Owner: &set},
		{Path: ".spec.replicas", Type: report.TypeChanged, Owner: &hpa},
		{Path: `.spec.template.spec.containers[name="app"].env[name="DEBUG"]`, Type: report.TypeAdded, Owner: &patch, NewKey: true},
		{Path: `.spec.template.spec.containers[name="istio-proxy"]`, Type: report.TypeAdded, NewKey: true},
		{Path: ".metadata.annotations.sidecar.istio.io/status", Type: report.TypeAdded, NewKey: true},
		{Path: ".spec.progressDeadlineSeconds", Type: report.TypeAdded},
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, ch := range changes {
			_ = cl.Classify(o, ch)
		}
	}
}
