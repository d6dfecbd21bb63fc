package driftscan_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const module = "github.com/calricon/driftscan"

// stage is one row of the table in docs/architecture.md.
type stage struct {
	layer int
	kind  string // "library", "tool" or "test support"
}

// facades are the only driftscan packages cmd/driftscan may import, with
// its own (cmd/driftscan/internal/): it reaches every stage below them
// through run (docs/architecture.md).
var facades = map[string]bool{"run": true, "doctor": true, "breakglass": true, "contract": true, "backport": true, "discover": true, "config": true, "report": true}

// listed is what `go list -json` says of one package: its non-test
// imports, every package it depends on, and what its tests import.
type listed struct {
	ImportPath   string
	Imports      []string
	Deps         []string
	TestGoFiles  []string
	XTestGoFiles []string
	TestImports  []string
	XTestImports []string
}

// readStages reads the package table of docs/architecture.md: rows of
// "| layer | package | kind | what it holds |".
func readStages(r io.Reader) (map[string]stage, error) {
	stages := map[string]stage{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		cells := strings.Split(strings.Trim(strings.TrimSpace(sc.Text()), "|"), "|")
		if len(cells) != 4 {
			continue
		}
		layer, err := strconv.Atoi(strings.TrimSpace(cells[0]))
		if err != nil {
			continue // the header and its rule
		}
		pkg, kind := strings.TrimSpace(cells[1]), strings.TrimSpace(cells[2])
		switch kind {
		case "library", "tool", "test support":
		default:
			return nil, fmt.Errorf("package %s: kind %q is not library, tool or test support", pkg, kind)
		}
		if _, dup := stages[pkg]; dup {
			return nil, fmt.Errorf("package %s is in the table twice", pkg)
		}
		stages[pkg] = stage{layer: layer, kind: kind}
	}
	if len(stages) == 0 {
		return nil, errors.New("no package table")
	}
	return stages, sc.Err()
}

// violations lists every import that breaks the order of stages, and every
// package the table leaves out.
func violations(stages map[string]stage, pkgs []listed) []string {
	var out []string
	for _, p := range pkgs {
		name := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		if name == "" {
			continue // this test
		}
		from, ok := stages[name]
		if !ok {
			out = append(out, fmt.Sprintf("%s is not in docs/architecture.md", name))
			continue
		}
		for _, imp := range p.Imports {
			switch {
			case imp == "github.com/spf13/cobra" && !strings.HasPrefix(name, "cmd/"):
				out = append(out, fmt.Sprintf("%s imports cobra: only cmd/ may", name))
			case name == "classify" && strings.HasPrefix(imp, "k8s.io/client-go"):
				out = append(out, fmt.Sprintf("classify imports %s: it takes no Kubernetes client", imp))
			}
			dep, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				continue
			}
			to, ok := stages[dep]
			switch {
			case !ok:
				// Reported as a package of its own.
			case to.layer >= from.layer:
				out = append(out, fmt.Sprintf("%s (layer %d) imports %s (layer %d): a package imports only lower layers", name, from.layer, dep, to.layer))
			case from.kind == "library" && to.kind != "library":
				out = append(out, fmt.Sprintf("%s is a library and imports %s, a %s", name, dep, to.kind))
			case name == "cmd/driftscan" && !facades[dep] && !strings.HasPrefix(dep, "cmd/driftscan/internal/"):
				out = append(out, fmt.Sprintf("cmd/driftscan imports %s: it wires only the facades, and reaches the rest through run", dep))
			}
		}
	}
	return out
}

// goList lists every package of the module.
func goList(t *testing.T) []listed {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "list", "-json=ImportPath,Imports,Deps,TestGoFiles,XTestGoFiles,TestImports,XTestImports", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	data, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []listed
	for dec := json.NewDecoder(bytes.NewReader(data)); ; {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestEveryPackageAcceptsUpdate: `go test ./... -update` rewrites the
// goldens, so every package with tests must know the flag, which
// fixtures/golden defines.
func TestEveryPackageAcceptsUpdate(t *testing.T) {
	const golden = module + "/fixtures/golden"
	pkgs := goList(t)
	deps := map[string][]string{}
	for _, p := range pkgs {
		deps[p.ImportPath] = p.Deps
	}
	for _, p := range pkgs {
		if len(p.TestGoFiles)+len(p.XTestGoFiles) == 0 || p.ImportPath == golden {
			continue
		}
		ok := slices.Contains(p.Deps, golden) // its own code imports it
		for _, imp := range append(append([]string{}, p.TestImports...), p.XTestImports...) {
			ok = ok || imp == golden || slices.Contains(deps[imp], golden)
		}
		if !ok {
			t.Errorf("%s: its tests do not import fixtures/golden (or fixtures/cluster), so go test -update fails there", p.ImportPath)
		}
	}
}

func TestNoPackageImportsALaterStage(t *testing.T) {
	f, err := os.Open("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stages, err := readStages(f)
	if err != nil {
		t.Fatalf("docs/architecture.md: %v", err)
	}
	pkgs := goList(t)
	if len(pkgs) < len(stages)/2 {
		t.Fatalf("go list found %d packages, the table has %d", len(pkgs), len(stages))
	}
	for _, v := range violations(stages, pkgs) {
		t.Error(v)
	}
}

func TestTheOrderCheckCatchesEachKindOfViolation(t *testing.T) {
	stages, err := readStages(strings.NewReader(`
| layer | package | kind | what it holds |
|---|---|---|---|
| 0 | report | library | the contract |
| 1 | classify | library | rules |
| 4 | scanner | library | the engine |
| 5 | notify | library | senders |
| 0 | fixtures/cluster | test support | a control plane |
| 8 | cmd/driftscan | tool | flags |
| 0 | cmd/driftscan/internal/startheap | library | the heap at start |
`))
	if err != nil {
		t.Fatal(err)
	}
	pkgs := []listed{
		{ImportPath: module + "/scanner", Imports: []string{module + "/report", module + "/notify"}},
		{ImportPath: module + "/notify", Imports: []string{module + "/report", module + "/fixtures/cluster", "github.com/spf13/cobra"}},
		{ImportPath: module + "/classify", Imports: []string{module + "/report", "k8s.io/client-go/kubernetes"}},
		{ImportPath: module + "/report", Imports: []string{module + "/report"}},
		{ImportPath: module + "/cmd/driftscan", Imports: []string{module + "/report", module + "/scanner", module + "/cmd/driftscan/internal/startheap", "github.com/spf13/cobra"}},
		{ImportPath: module + "/newpkg"},
	}
	want := []string{
		"scanner (layer 4) imports notify (layer 5): a package imports only lower layers",
		"notify is a library and imports fixtures/cluster, a test support",
		"notify imports cobra: only cmd/ may",
		"classify imports k8s.io/client-go/kubernetes: it takes no Kubernetes client",
		"report (layer 0) imports report (layer 0): a package imports only lower layers",
		"cmd/driftscan imports scanner: it wires only the facades, and reaches the rest through run",
		"newpkg is not in docs/architecture.md",
	}
	if diff := cmp.Diff(want, violations(stages, pkgs)); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
}
