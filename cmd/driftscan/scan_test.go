package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/golden"
	"github.com/calricon/driftscan/render"
	"github.com/calricon/driftscan/report"
)

var env *cluster.Env

func TestMain(m *testing.M) {
	if os.Getenv(runAsDriftscan) == "1" {
		// A test started this binary as the command itself (tty_test.go).
		main()
	}
	if os.Getenv(runAlone) == "1" {
		// A test started this binary to run one test of its own in a fresh
		// process, with no control plane (hugepages_linux_test.go).
		os.Exit(m.Run())
	}
	// The scans' caches (--cache-dir's default) go to a folder of the
	// tests' own, not the user's.
	cache, err := os.MkdirTemp("", "driftscan-cmd-cache-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CACHE_HOME", cache)
	code := cluster.Main(m, &env)
	os.RemoveAll(cache)
	os.Exit(code)
}

// result is one run of the command line.
type result struct {
	code     int
	out, err string
}

func runCLI(t *testing.T, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := execute(t.Context(), args, streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	return result{code: code, out: out.String(), err: errb.String()}
}

// driftedWeb syncs fixtures/apps/web into a new namespace as Argo CD would,
// then a pipeline sets the image and a human edits the ConfigMap.
func driftedWeb(t *testing.T) string {
	t.Helper()
	ns := env.Namespace(t, nil)
	abs, _ := filepath.Abs("../../fixtures/apps/web")
	manifests, err := render.Manifests(t.Context(), render.Options{Dir: abs})
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range manifests {
		env.Apply(t, "argocd-controller", ns, mf.Object)
	}
	env.Patch(t, "kubectl-set", cluster.Deployment, ns, "web", types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.26"}]}}}}`)
	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "web-config", types.MergePatchType, `{"data":{"LOG_LEVEL":"debug"}}`)
	return ns
}

var ageColumn = regexp.MustCompile(`\b\d+s\b`)

func TestScanAPathPrintsTheTableAndExitsOneOnDrift(t *testing.T) {
	env.Need(t)
	ns := driftedWeb(t)
	t.Setenv("NO_COLOR", "1")
	res := runCLI(t, "scan", "--kubeconfig", env.Kubeconfig, "--path", "../../fixtures/apps/web", "-n", ns, "-o", "table")
	if res.code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", res.code, res.err)
	}
	if res.err != "" {
		t.Errorf("stderr is not empty: %q", res.err)
	}
	out := strings.ReplaceAll(res.out, ns, "NAMESPACE")
	out = regexp.MustCompile(`scanned \S+ \S+ UTC`).ReplaceAllString(out, "scanned TIME")
	out = ageColumn.ReplaceAllString(out, "AGE")
	golden.Check(t, "scan-path.table.golden", []byte(out))
}

func TestScanWritesSeveralFormatsInOneRun(t *testing.T) {
	env.Need(t)
	ns := driftedWeb(t)
	dir := t.TempDir()
	res := runCLI(t, "scan", "--kubeconfig", env.Kubeconfig, "--path", "../../fixtures/apps/web", "-n", ns,
		"-o", "json", "-o", "sarif="+filepath.Join(dir, "drift.sarif"), "-o", "junit="+filepath.Join(dir, "drift.xml"),
		"-o", "html="+filepath.Join(dir, "drift.html"))
	if res.code != 1 {
		t.Fatalf("exit %d; stderr:\n%s", res.code, res.err)
	}
	var r report.Report
	if err := json.Unmarshal([]byte(res.out), &r); err != nil {
		t.Fatalf("stdout is not the JSON report: %v\n%s", err, res.out)
	}
	if r.Cluster != "envtest" || r.Summary.Findings != 2 || r.Summary.ByClass[report.ClassPipeline] != 1 || r.Summary.ByClass[report.ClassHuman] != 1 {
		t.Errorf("cluster %q summary %+v", r.Cluster, r.Summary)
	}
	for _, f := range []string{"drift.sarif", "drift.xml"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || len(data) == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	page, err := os.ReadFile(filepath.Join(dir, "drift.html"))
	if err != nil || !bytes.HasPrefix(page, []byte("<!DOCTYPE html>")) ||
		!bytes.Contains(page, []byte("nginx:1.26")) || !bytes.Contains(page, []byte("kubectl-edit")) {
		t.Errorf("drift.html is not the HTML report of this scan (%v):\n%.300s", err, page)
	}
}

func TestFailOnDecidesTheExitCode(t *testing.T) {
	env.Need(t)
	ns := driftedWeb(t) // pipeline and human drift
	cases := []struct {
		failOn string
		want   int
	}{
		{"all", 1},
		{"human", 1},
		{"webhook,operator", 0},
		{"none", 0},
		// The scan read everything: warning adds no failure of its own.
		{"warning", 0},
		{"human,warning", 1},
	}
	for _, c := range cases {
		res := runCLI(t, "scan", "--kubeconfig", env.Kubeconfig, "--path", "../../fixtures/apps/web", "-n", ns, "-o", "json", "--fail-on", c.failOn)
		if res.code != c.want {
			t.Errorf("--fail-on %s: exit %d, want %d; stderr:\n%s", c.failOn, res.code, c.want, res.err)
		}
	}
	if res := runCLI(t, "scan", "--kubeconfig", env.Kubeconfig, "--path", "../../fixtures/apps/web", "--fail-on", "robots"); res.code != 2 || !strings.Contains(res.err, `unknown class "robots"`) {
		t.Errorf("bad --fail-on: exit %d stderr %q", res.code, res.err)
	}
}

func TestKubeconfigIsResolvedLikeKubectl(t *testing.T) {
	env.Need(t)
	ns := driftedWeb(t)
	// A kubeconfig whose current context points nowhere, and a second
	// context that is the test cluster.
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Clusters["nowhere"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	cfg.Contexts["broken"] = &clientcmdapi.Context{Cluster: "nowhere", AuthInfo: cfg.Contexts["envtest"].AuthInfo}
	cfg.Contexts["test"] = cfg.Contexts["envtest"].DeepCopy()
	cfg.Contexts["test"].Namespace = ns
	cfg.CurrentContext = "broken"
	path := filepath.Join(t.TempDir(), "config")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", path)

	res := runCLI(t, "scan", "--path", "../../fixtures/apps/web", "-o", "json")
	if res.code != 2 || !strings.Contains(res.err, "cannot reach the cluster at https://127.0.0.1:1") || strings.Count(res.err, "\n") != 1 {
		t.Errorf("unreachable current context: exit %d, stderr %q; want exit 2 and one clear line", res.code, res.err)
	}
	// --context picks the test cluster, and its namespace is the default.
	res = runCLI(t, "scan", "--context", "test", "--path", "../../fixtures/apps/web", "-o", "json")
	if res.code != 1 {
		t.Fatalf("--context test: exit %d; stderr %s", res.code, res.err)
	}
	var r report.Report
	if err := json.Unmarshal([]byte(res.out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Cluster != "test" || r.Apps[0].Objects[0].Namespace != ns {
		t.Errorf("cluster %q namespace %q, want test and %s", r.Cluster, r.Apps[0].Objects[0].Namespace, ns)
	}
}

func TestBadInvocationsSayWhatIsWrong(t *testing.T) {
	env.Need(t)
	dir := t.TempDir()
	badConfig := filepath.Join(dir, "scan.yaml")
	if err := os.WriteFile(badConfig, []byte("apiVersion: driftscan.dev/v1alpha1\nkind: ScanConfig\napps:\n- name: web\n  sourse: {path: .}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"scan", "--kubeconfig", env.Kubeconfig}, "give --config FILE, --path DIR or --from argocd|flux"},
		{[]string{"scan", "--kubeconfig", env.Kubeconfig, "--config", badConfig}, "line 5: field sourse not found"},
		{[]string{"scan", "--kubeconfig", env.Kubeconfig, "--path", "/does/not/exist"}, "--path: stat /does/not/exist"},
		{[]string{"scan", "--kubeconfig", env.Kubeconfig, "--path", ".", "-o", "toml"}, `unknown output format "toml"`},
		{[]string{"scan", "--kubeconfig", filepath.Join(dir, "missing"), "--path", "."}, "missing"},
		{[]string{"scan", "--kubeconfig", env.Kubeconfig, "--path", ".", "--chunk-size", "-5"}, `--chunk-size "-5": want auto, 0 (whole lists) or a number of objects`},
		{[]string{"scan", "--kubeconfig", env.Kubeconfig, "--path", ".", "--chunk-size", "lots"}, `--chunk-size "lots"`},
	}
	for _, c := range cases {
		res := runCLI(t, c.args...)
		if res.code != 2 || !strings.Contains(res.err, c.want) || res.out != "" {
			t.Errorf("%v: exit %d stdout %q stderr %q; want exit 2 and %q", c.args, res.code, res.out, res.err, c.want)
		}
	}
}

func TestVersion(t *testing.T) {
	res := runCLI(t, "version", "-o", "json")
	var v versionInfo
	if err := json.Unmarshal([]byte(res.out), &v); err != nil || res.code != 0 {
		t.Fatalf("exit %d: %v\n%s", res.code, err, res.out)
	}
	if v.Version == "" || v.Commit == "" || !strings.HasPrefix(v.GoVersion, "go1.") {
		t.Errorf("version = %+v", v)
	}
	if res := runCLI(t, "version"); !strings.HasPrefix(res.out, "driftscan ") {
		t.Errorf("version = %q", res.out)
	}
	res = runCLI(t, "version", "-o", "yaml")
	var y versionInfo
	if err := yaml.UnmarshalStrict([]byte(res.out), &y); err != nil || res.code != 0 || y != v {
		t.Errorf("version -o yaml: exit %d, %v: %+v, want %+v\n%s", res.code, err, y, v, res.out)
	}
	if res := runCLI(t, "version", "-o", "toml"); res.code != 2 || !strings.Contains(res.err, "want json, yaml or nothing") {
		t.Errorf("version -o toml: exit %d, %q", res.code, res.err)
	}
}

func TestChunkSizeIsWhatTheScanTakes(t *testing.T) {
	for in, want := range map[string]int64{"auto": 0, "0": -1, "1": 1, "500": 500} {
		if got, err := parseChunkSize(in); err != nil || got != want {
			t.Errorf("--chunk-size %s = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "1.5", "Auto", "500 "} {
		if got, err := parseChunkSize(in); err == nil {
			t.Errorf("--chunk-size %q = %d, want an error", in, got)
		}
	}
}
