package render

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"sigs.k8s.io/yaml"
)

// maxLocalDependencies bounds how many charts file:// dependencies may pull
// in, all levels together: a chart that depends on itself through a chain
// of folders would otherwise never end.
const maxLocalDependencies = 32

// withLocalDependencies adds to a chart's files the charts its Chart.yaml
// names with a file:// repository and that are not vendored under charts/,
// as `helm dependency build` (which Argo CD and Flux run) copies them there:
// each under charts/<name>/, read through the same root, so a path that
// leaves the repository is an error, and checked as Helm checks them (the
// chart there has the dependency's name and a version its constraint
// allows). Their files join the chart's, so the render cache sees a change
// to a library chart the app shares with others. Dependencies from chart
// repositories are left for vendoredDependencies to report.
//
// moved maps each dependency's place among the chart's files
// (charts/cache/) to its folder relative to the chart's
// (../cache/), for relocate.
func withLocalDependencies(src *sourceRoot, files []*archive.BufferedFile) (_ []*archive.BufferedFile, moved map[string]string, _ error) {
	d := localDeps{top: src.dir, budget: int64(archive.MaxDecompressedChartSize)}
	for _, f := range files {
		d.budget -= int64(len(f.Data))
	}
	files, err := d.add(src, files, files, "", nil)
	return files, d.moved, err
}

// localDeps is what withLocalDependencies carries through the levels.
type localDeps struct {
	top    string // the chart's folder, relative to the root
	budget int64  // bytes left of archive.MaxDecompressedChartSize
	count  int    // charts added
	moved  map[string]string
}

// add is withLocalDependencies for one chart: own are its files (named
// under prefix, its charts/<name>/ among the top chart's files), files all
// of them so far. want is the dependency that brought the chart in (nil
// for the top chart), which it must fit.
func (l *localDeps) add(src *sourceRoot, files, own []*archive.BufferedFile, prefix string, want *chart.Dependency) ([]*archive.BufferedFile, error) {
	var meta chart.Metadata
	have := map[string]bool{}
	for _, f := range own {
		rest := strings.TrimPrefix(f.Name, prefix)
		if rest == "Chart.yaml" {
			if err := yaml.Unmarshal(f.Data, &meta); err != nil {
				return nil, fmt.Errorf("%sChart.yaml: %w", prefix, err)
			}
		}
		if sub, ok := strings.CutPrefix(rest, "charts/"); ok {
			name, _, _ := strings.Cut(sub, "/")
			have[name] = true
		}
	}
	if want != nil {
		if err := localDependencyFits(want, &meta); err != nil {
			return nil, fmt.Errorf("dependency %s (%s): %w", want.Name, want.Repository, err)
		}
	}
	for _, d := range meta.Dependencies {
		dir, ok := strings.CutPrefix(d.Repository, "file://")
		if !ok || d.Name == "" || vendored(have, d.Name) {
			continue
		}
		if l.count++; l.count > maxLocalDependencies {
			return nil, fmt.Errorf("more than %d charts through file:// dependencies (does one depend on itself?)", maxLocalDependencies)
		}
		where := fmt.Sprintf("dependency %s (%s)", d.Name, d.Repository)
		at, err := src.inside(dir)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		dep, err := chartFiles(&sourceRoot{root: src.root, dir: at, artifact: src.artifact})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		into := prefix + "charts/" + d.Name + "/"
		for _, f := range dep {
			if l.budget -= int64(len(f.Data)); l.budget < 0 {
				return nil, fmt.Errorf("%s: the chart and its dependencies are larger than the maximum size %d", where, archive.MaxDecompressedChartSize)
			}
			f.Name = path.Join(into, f.Name)
		}
		files = append(files, dep...)
		if rel, err := filepath.Rel(filepath.FromSlash(l.top), filepath.FromSlash(at)); err == nil {
			if l.moved == nil {
				l.moved = map[string]string{}
			}
			l.moved[into] = filepath.ToSlash(rel) + "/"
		}
		// The chart there, then its own file:// dependencies, relative to
		// its folder.
		if files, err = l.add(&sourceRoot{root: src.root, dir: at, artifact: src.artifact}, files, dep, into, d); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// vendored reports whether charts/ holds the dependency, as a folder or as
// Helm's <name>-<version>.tgz.
func vendored(have map[string]bool, name string) bool {
	if have[name] {
		return true
	}
	for f := range have {
		if strings.HasPrefix(f, name+"-") && strings.HasSuffix(f, ".tgz") {
			return true
		}
	}
	return false
}

// localDependencyFits checks the chart a file:// dependency names as
// `helm dependency build` does (downloader.tarFromLocalDir): its version
// must satisfy the dependency's constraint; and it must be the chart the
// dependency names, which Helm's dependency processing needs to find it.
func localDependencyFits(d *chart.Dependency, m *chart.Metadata) error {
	if m.Name == "" {
		return fmt.Errorf("no Chart.yaml with a name there")
	}
	if m.Name != d.Name {
		return fmt.Errorf("the chart there is %q, not %q", m.Name, d.Name)
	}
	constraint, err := semver.NewConstraint(d.Version)
	if err != nil {
		return fmt.Errorf("invalid version/constraint format %q: %w", d.Version, err)
	}
	v, err := semver.NewVersion(m.Version)
	if err != nil {
		return fmt.Errorf("version %q: %w", m.Version, err)
	}
	if !constraint.Check(v) {
		return fmt.Errorf("the chart there is version %s, which %q does not allow", m.Version, d.Version)
	}
	return nil
}

// relocate gives the manifests a file:// dependency rendered the file they
// come from, relative to the chart's folder (../cache/templates/pvc.yaml),
// rather than the place Helm renders them from (charts/cache/templates/…),
// which is not in the repository. The deepest dependency's place wins.
func relocate(ms []Manifest, moved map[string]string) {
	if len(moved) == 0 {
		return
	}
	for i := range ms {
		best := ""
		for virtual := range moved {
			if len(virtual) > len(best) && strings.HasPrefix(ms[i].File, virtual) {
				best = virtual
			}
		}
		if best != "" {
			ms[i].File = moved[best] + strings.TrimPrefix(ms[i].File, best)
		}
	}
}
