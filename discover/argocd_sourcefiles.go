package discover

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

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

// ArgoSourceFiles is app's source as Argo CD's repo server renders it at
// commit from dir, its folder: the parameter files in dir merged in as Argo
// CD merges them, then its build environment substituted (argoBuildEnv);
// changed is false when neither changes it (or app is no Argo CD source).
// problems name what the source sets that driftscan does not apply. A file
// that does not parse, or does not merge, is an error: Argo CD does not
// render the app either.
func ArgoSourceFiles(app config.App, dir, commit string) (src config.Source, problems []string, changed bool, err error) {
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
	for _, name := range []string{argoSourceFile, fmt.Sprintf(argoAppSourceFile, app.ArgoInstance)} {
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
	if !changed && !bytes.Contains(merged, []byte("$")) {
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
	env := argoBuildEnv(app.ArgoInstance, a, s, commit)
	if !env.substitute(&s, refs) && !changed {
		return app.Source, nil, false, nil
	}
	var d discovery
	src, problems = d.argoSource(a.Name, s, refs)
	// What discovery already said of the Application's own source (a
	// forceString parameter left out) is its error already.
	_, said := d.argoSource(a.Name, base, refs)
	problems = slices.DeleteFunc(problems, func(p string) bool { return slices.Contains(said, p) })
	// Where and at which revision stay the scan's (a synced commit, a
	// checkout's credentials).
	src.Repo, src.Revision, src.Path, src.Chart, src.Auth, src.PlainHTTP = app.Source.Repo, app.Source.Revision, app.Source.Path, app.Source.Chart, app.Source.Auth, app.Source.PlainHTTP
	return src, problems, true, nil
}

// buildEnv is Argo CD's build environment: the variables its repo server
// substitutes in an Application's source (reposerver/repository newEnv,
// v1alpha1.Env.Envsubst).
type buildEnv map[string]string

// argoBuildEnv is the build environment of a's source s at commit, of the
// Application Argo CD names instance (config.App.ArgoInstance).
func argoBuildEnv(instance string, a *config.ArgoSource, s appSource, commit string) buildEnv {
	short := func(n int) string { return commit[:min(n, len(commit))] }
	return buildEnv{
		"ARGOCD_APP_NAME": instance, "ARGOCD_APP_NAMESPACE": a.Namespace, "ARGOCD_APP_PROJECT_NAME": a.Project,
		"ARGOCD_APP_REVISION": commit, "ARGOCD_APP_REVISION_SHORT": short(7), "ARGOCD_APP_REVISION_SHORT_8": short(8),
		"ARGOCD_APP_SOURCE_REPO_URL": s.RepoURL, "ARGOCD_APP_SOURCE_PATH": s.Path, "ARGOCD_APP_SOURCE_TARGET_REVISION": s.TargetRevision,
	}
}

// subst is Envsubst: os.Expand over the variables, "$$" a "$", and a
// variable that is not one of them empty.
func (e buildEnv) subst(v string) string {
	return os.Expand(v, func(name string) string {
		if name == "$" {
			return "$"
		}
		return e[name]
	})
}

// substitute substitutes the environment where Argo CD does: a
// kustomize source's images and commonLabels (commonAnnotations with
// commonAnnotationsEnvsubst), a Helm source's parameters, and the paths of
// its values files and fileParameters that name no ref source. It says
// whether anything changed.
func (e buildEnv) substitute(s *appSource, refs map[string]appSource) bool {
	changed := false
	sub := func(v *string) {
		if n := e.subst(*v); n != *v {
			*v, changed = n, true
		}
	}
	subMap := func(m map[string]string) {
		for k, v := range m {
			sub(&v)
			m[k] = v
		}
	}
	if k := s.Kustomize; k != nil {
		for i := range k.Images {
			sub(&k.Images[i])
		}
		subMap(k.CommonLabels)
		if k.CommonAnnotationsEnvsubst {
			subMap(k.CommonAnnotations)
		}
	}
	if h := s.Helm; h != nil {
		for i := range h.Parameters {
			sub(&h.Parameters[i].Value)
		}
		for i, f := range h.ValueFiles {
			if !refersToSource(f, refs) {
				sub(&h.ValueFiles[i])
			}
		}
		for i, f := range h.FileParameters {
			if !refersToSource(f.Path, refs) {
				sub(&h.FileParameters[i].Path)
			}
		}
	}
	return changed
}

// refersToSource says whether a values file path names a ref source
// ($values/...), whose path Argo CD substitutes after resolving it.
func refersToSource(p string, refs map[string]appSource) bool {
	if !strings.HasPrefix(p, "$") {
		return false
	}
	name, _, _ := strings.Cut(p[1:], "/")
	_, ok := refs[name]
	return ok
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
