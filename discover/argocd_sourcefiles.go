package discover

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"sigs.k8s.io/yaml"

	"github.com/calricon/driftscan/config"
)

// The parameter files Argo CD's repo server merges into an Application's
// source before it renders it (reposerver/repository's
// mergeSourceParameters, v3.5.7): .argocd-source.yaml, then
// .argocd-source-<app>.yaml, in the source's folder, each a JSON merge
// patch of the source written as YAML. Argo CD Image Updater's write-back
// to Git writes the second: the image tags an app runs are there, not in
// the Application or its kustomization.
const (
	argoSourceFile    = ".argocd-source.yaml"
	argoAppSourceFile = ".argocd-source-%s.yaml"
)

// maxArgoSourceFile bounds a parameter file: a few overrides, never more
// than a manifest.
const maxArgoSourceFile = 1 << 20

// ArgoSourceFiles is app's source with the parameter files in dir, its
// rendered folder, merged in as Argo CD merges them; changed is false when
// dir has none (or app is no Argo CD source). problems name what the merged
// source sets that driftscan does not apply. A file that does not parse, or
// does not merge, is an error: Argo CD does not render the app either.
func ArgoSourceFiles(app config.App, dir string) (src config.Source, problems []string, changed bool, err error) {
	a := app.ArgoSource
	if a == nil {
		return app.Source, nil, false, nil
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return app.Source, nil, false, nil // no folder: the render says so
	}
	defer root.Close()
	merged := a.Source
	for _, name := range []string{argoSourceFile, fmt.Sprintf(argoAppSourceFile, a.Instance)} {
		patch, err := readSourceFile(root, name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil {
			patch, err = yaml.YAMLToJSON(patch)
		}
		if err == nil {
			merged, err = jsonpatch.MergePatch(merged, patch)
		}
		if err != nil {
			return app.Source, nil, false, fmt.Errorf("%s: %w", name, err)
		}
		changed = true
	}
	if !changed {
		return app.Source, nil, false, nil
	}
	var base, s appSource
	refs := map[string]appSource{}
	if err := json.Unmarshal(a.Source, &base); err != nil {
		return app.Source, nil, false, err
	}
	if err := json.Unmarshal(merged, &s); err != nil {
		return app.Source, nil, false, fmt.Errorf("the source with its parameter files: %w", err)
	}
	if len(a.Refs) > 0 {
		if err := json.Unmarshal(a.Refs, &refs); err != nil {
			return app.Source, nil, false, err
		}
	}
	// Only what tells the tools how to render comes from the files.
	s.Chart, s.Path, s.RepoURL, s.TargetRevision = base.Chart, base.Path, base.RepoURL, base.TargetRevision
	var d discovery
	src, problems = d.argoSource(a.Name, s, refs)
	// Where and at which revision stay the scan's (a synced commit, a
	// checkout's credentials).
	src.Repo, src.Revision, src.Path, src.Chart, src.Auth, src.PlainHTTP = app.Source.Repo, app.Source.Revision, app.Source.Path, app.Source.Chart, app.Source.Auth, app.Source.PlainHTTP
	return src, problems, true, nil
}

// readSourceFile reads a parameter file of root, bounded; a folder or
// anything else that is not a regular file is not one.
func readSourceFile(root *os.Root, name string) ([]byte, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fs.ErrNotExist // Argo CD skips a folder of that name
	}
	data, err := io.ReadAll(io.LimitReader(f, maxArgoSourceFile+1))
	if err == nil && len(data) > maxArgoSourceFile {
		err = fmt.Errorf("larger than %d bytes", maxArgoSourceFile)
	}
	return data, err
}
