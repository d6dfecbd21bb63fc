package render

import (
	"fmt"
	"path"
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
func withLocalDependencies(src *sourceRoot, files []*archive.BufferedFile) ([]*archive.BufferedFile, error) {
	budget, count := int64(archive.MaxDecompressedChartSize), 0
	for _, f := range files {
		budget -= int64(len(f.Data))
	}
	return addLocalDependencies(src, files, "", &budget, &count)
}

// addLocalDependencies is withLocalDependencies for the chart whose files
// are under prefix (its charts/<name>/ inside the top chart's files).
func addLocalDependencies(src *sourceRoot, files []*archive.BufferedFile, prefix string, budget *int64, count *int) ([]*archive.BufferedFile, error) {
	var meta chart.Metadata
	have := map[string]bool{}
	found := false
	for _, f := range files {
		rest, ok := strings.CutPrefix(f.Name, prefix)
		if !ok {
			continue
		}
		if rest == "Chart.yaml" {
			if err := yaml.Unmarshal(f.Data, &meta); err != nil {
				return nil, fmt.Errorf("%sChart.yaml: %w", prefix, err)
			}
			found = true
		}
		if sub, ok := strings.CutPrefix(rest, "charts/"); ok {
			name, _, _ := strings.Cut(sub, "/")
			have[name] = true
		}
	}
	if !found {
		return files, nil
	}
	for _, d := range meta.Dependencies {
		dir, ok := strings.CutPrefix(d.Repository, "file://")
		if !ok || d.Name == "" || vendored(have, d.Name) {
			continue
		}
		if *count++; *count > maxLocalDependencies {
			return nil, fmt.Errorf("more than %d charts through file:// dependencies (does one depend on itself?)", maxLocalDependencies)
		}
		where := fmt.Sprintf("dependency %s (%s)", d.Name, d.Repository)
		at, err := src.inside(dir)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		dep, err := chartFiles(&sourceRoot{root: src.root, dir: at})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		into := prefix + "charts/" + d.Name + "/"
		var depMeta chart.Metadata
		for _, f := range dep {
			if *budget -= int64(len(f.Data)); *budget < 0 {
				return nil, fmt.Errorf("%s: the chart and its dependencies are larger than the maximum size %d", where, archive.MaxDecompressedChartSize)
			}
			if f.Name == "Chart.yaml" {
				if err := yaml.Unmarshal(f.Data, &depMeta); err != nil {
					return nil, fmt.Errorf("%s: Chart.yaml: %w", where, err)
				}
			}
			f.Name = path.Join(into, f.Name)
		}
		if err := localDependencyFits(d, &depMeta); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		files = append(files, dep...)
		// Its own file:// dependencies, relative to its folder.
		if files, err = addLocalDependencies(&sourceRoot{root: src.root, dir: at}, files, into, budget, count); err != nil {
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
