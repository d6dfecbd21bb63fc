// Package backport carries live hotfixes back to Git: for each pipeline or
// human finding of an app, it writes the live value into the app's source
// in a Git working tree, so that Git matches the fixed cluster, on a new
// branch, as one commit, and pushes that branch when asked (Push, never
// forced). It never touches a working tree with uncommitted changes.
//
// How a value is written depends on the source:
//   - plain YAML: the field is edited in the file and document that declare
//     the object, in place: comments, key order, quoting and indentation of
//     everything else stay as they were;
//   - Kustomize: a strategic-merge patch driftscan-hotfix-<kind>-<name>.yaml
//     is written (or extended) next to the overlay's kustomization and listed
//     under its patches; the bases are not touched;
//   - Helm: when a chart value maps to the field one to one (found by
//     rendering the chart with a probe value), that value is changed in the
//     values file; otherwise a suggested patch
//     driftscan-hotfix-<kind>-<name>.patch.yaml is written for a person to
//     finish, and the finding is reported as not backported.
//
// Every write is checked by rendering the edited source: the edited object
// must come out as Git's object with exactly the backported fields set to
// their live values, and every other object unchanged. A write that does
// not pass is undone and reported as not backported.
package backport

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/render"
	"github.com/calricon/driftscan/report"
)

// Options say where backport writes, how the source renders and why.
type Options struct {
	// Repo is the Git working tree (its root, or a folder inside it).
	Repo string
	// SourceDir is the app's source folder, inside Repo.
	SourceDir string
	// Namespace, Helm and Kustomize render the source as the scan did
	// (config.App's Namespace and Source.Helm, Source.Kustomize);
	// KubeVersion and APIVersions are the cluster's, for Helm.
	Namespace   string
	Helm        *config.HelmSource
	Kustomize   *config.KustomizeSource
	KubeVersion string
	APIVersions []string
	// Branch is the branch to create; default hotfix/<app>-<UTC time>.
	Branch string
	// Extend commits on top of Branch when it exists already (a second
	// backport of the same hotfix, see Track) instead of refusing; a branch
	// that already holds every change gets no new commit (Result.UpToDate).
	Extend bool
	// DryRun writes and verifies as usual, then puts every file and the
	// branch back as they were: Result says what would be committed, and
	// nothing is (Result.DryRun).
	DryRun bool
	// Reason is why the cluster was changed (an incident, a ticket).
	Reason string
	// AllowSensitive writes values that look like credentials (see
	// PlanOptions); the scan must have revealed them
	// (scanner.Options.RevealSensitive).
	AllowSensitive bool
	// AuthorName and AuthorEmail sign the commit; by default the Git
	// config's user.name and user.email, else driftscan <driftscan@localhost>.
	AuthorName, AuthorEmail string
	// Now is the clock, for the branch name and the commit time.
	Now func() time.Time

	// root is the working tree's root, set by Run: nothing is read or
	// written outside it.
	root string
}

// DefaultOptions returns the options backport uses unless told otherwise.
func DefaultOptions() Options { return Options{Now: time.Now} }

// Source kinds, as Result.Source names them.
const (
	SourcePlain     = "plain YAML"
	SourceKustomize = "kustomize"
	SourceHelm      = "helm"
)

// Result says what backport did. Nothing was committed when Commit is empty.
type Result struct {
	App    string
	Reason string
	// Source is the kind of the app's source: SourcePlain, SourceKustomize
	// or SourceHelm.
	Source string
	// Branch is the new branch and Commit its one commit; Base is the
	// commit the working tree was at, which the branch starts from (with
	// Options.Extend, the new commit's parent is the branch's tip instead).
	Branch, Base, Commit string
	// Root is the working tree's root, which Files are relative to.
	Root string
	// From is the branch the working tree had checked out before, "" when
	// HEAD was detached: where a pull request would go.
	From string
	// UpToDate is set when Options.Extend found every change on the branch
	// already: Commit is the branch's tip, nothing new was committed.
	UpToDate bool
	// PushedTo is where the caller pushed the branch (a URL without
	// credentials), for the summary; "" when it was not pushed.
	PushedTo string
	// DryRun is set when Options.DryRun undid what was written: Commit is
	// empty, Message and Changes say what would have been committed.
	DryRun bool
	// Changes are the fields written; Skipped those that were not.
	Changes []Change
	Skipped []Skip
	// Files are the files written, relative to the repository root.
	Files []string
	// Message is the commit message.
	Message string
	// Warnings are things a person should know (the worktree is at another
	// commit than the scan read).
	Warnings []string
}

// Change is a field written to Git.
type Change struct {
	Edit
	// WrittenTo is the file written, relative to the repository root.
	WrittenTo string
	// Via says how: "manifest", "kustomize patch" or "helm value <key>".
	Via string
}

// Remaining reports whether findings were left out: the app still has
// pipeline or human drift that Git does not contain.
func (r *Result) Remaining() bool { return len(r.Skipped) > 0 }

// ErrDirty marks a working tree with uncommitted changes: nothing was
// written.
var ErrDirty = errors.New("the working tree has uncommitted changes")

// Run carries app's pipeline and human findings (see Plan) back to Git.
// It returns an error, and leaves the working tree as it was, when the tree
// is dirty, the branch exists, or the source does not render; findings it
// cannot write are in Result.Skipped with the reason.
func Run(ctx context.Context, app report.App, opts Options) (*Result, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if app.Error != "" {
		return nil, fmt.Errorf("app %s: the scan could not render it, so there is nothing reliable to backport: %s", app.Name, app.Error)
	}
	edits, skipped := Plan(app, PlanOptions{AllowSensitive: opts.AllowSensitive})
	res := &Result{App: app.Name, Reason: opts.Reason, Skipped: skipped, Source: sourceKind(opts)}
	if len(edits) == 0 {
		return res, nil
	}
	repo, err := openRepo(opts.Repo)
	if err != nil {
		return nil, err
	}
	if err := repo.clean(); err != nil {
		return nil, err
	}
	src, err := filepath.Abs(opts.SourceDir)
	if err != nil {
		return nil, err
	}
	if resolved, err := filepath.EvalSymlinks(src); err == nil {
		src = resolved
	}
	if rel, err := filepath.Rel(repo.root, src); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, fmt.Errorf("app %s: its source folder %s is not inside the repository %s", app.Name, src, repo.root)
	}
	opts.SourceDir, opts.root = src, repo.root
	res.Base, res.From, res.Root = repo.head.String(), repo.from.Short(), repo.root
	if app.Source.Commit != "" && app.Source.Commit != res.Base {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the scan read commit %s, the working tree is at %s: the branch starts from the working tree", short(app.Source.Commit), short(res.Base)))
	}
	res.Branch = opts.Branch
	if res.Branch == "" {
		res.Branch = fmt.Sprintf("hotfix/%s-%s", app.Name, opts.Now().UTC().Format("20060102T150405Z"))
	}
	// Check out first: with Extend, Git's side is the branch's tip.
	if err := repo.checkout(res.Branch, opts.Extend); err != nil {
		return nil, err
	}
	before, err := render.Manifests(ctx, renderOptions(opts))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("app %s: render %s before writing: %w", app.Name, src, err), repo.abandon())
	}
	targets, unmatched := match(edits, before)
	res.Skipped = append(res.Skipped, unmatched...)
	if len(targets) == 0 {
		res.Branch = ""
		return res, repo.abandon()
	}
	fs := &files{root: repo.root}
	undo := func(cause error) (*Result, error) {
		err := errors.Join(cause, fs.restore(), repo.abandon())
		return nil, err
	}
	w := newWriter(res.Source, opts, repo.root, before)
	var ws *writeSet
	for round := 0; ; round++ {
		if ws, err = w.write(ctx, targets); err != nil {
			return undo(fmt.Errorf("app %s: %w", app.Name, err))
		}
		if err := fs.write(ws.files); err != nil {
			return undo(err)
		}
		after, err := render.Manifests(ctx, renderOptions(opts))
		if err != nil {
			return undo(fmt.Errorf("app %s: the edited source no longer renders, so nothing was committed: %w", app.Name, err))
		}
		failed := verify(before, after, targets, ws.applied)
		if len(failed) == 0 {
			break
		}
		if round == 2 {
			return undo(fmt.Errorf("app %s: the edited source does not render as expected: %s", app.Name, strings.Join(sortedValues(failed), "; ")))
		}
		// Undo everything, set the failing objects aside and write again.
		if err := fs.restore(); err != nil {
			return undo(err)
		}
		fs = &files{root: repo.root}
		var kept []*target
		for _, t := range targets {
			reason, bad := failed[t]
			if !bad {
				kept = append(kept, t)
				continue
			}
			if !t.fallback && res.Source == SourceKustomize {
				t.fallback = true
				kept = append(kept, t)
				continue
			}
			for _, e := range t.edits {
				res.Skipped = append(res.Skipped, Skip{Edit: *e, Reason: "written, but rendering the edited source did not give the live value, so it was undone: " + reason})
			}
		}
		targets = kept
	}
	for _, s := range ws.skipped {
		if s.Suggestion != "" {
			s.Suggestion = repo.rel(s.Suggestion)
		}
		res.Skipped = append(res.Skipped, s)
	}
	for _, a := range ws.applied {
		res.Changes = append(res.Changes, Change{Edit: *a.edit, WrittenTo: repo.rel(a.file), Via: a.via})
	}
	for _, f := range fs.paths() {
		res.Files = append(res.Files, repo.rel(f))
	}
	if len(res.Files) == 0 {
		if repo.existed {
			res.Commit, res.UpToDate = repo.tip.String(), true
			return res, nil
		}
		if err := repo.abandon(); err != nil {
			return nil, err
		}
		res.Branch = ""
		return res, nil
	}
	res.Message = res.commitMessage()
	if opts.DryRun {
		res.DryRun = true
		return res, errors.Join(fs.restore(), repo.abandon())
	}
	commit, err := repo.commit(res.Files, res.Message, opts)
	if err != nil {
		return undo(err)
	}
	res.Commit = commit
	return res, nil
}

func sortedValues(m map[*target]string) []string {
	var out []string
	for t, v := range m {
		out = append(out, t.ref.String()+": "+v)
	}
	slices.Sort(out)
	return out
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func renderOptions(opts Options) render.Options {
	return render.Options{Dir: opts.SourceDir, Root: opts.root, Namespace: opts.Namespace, Helm: opts.Helm, Kustomize: opts.Kustomize, KubeVersion: opts.KubeVersion, APIVersions: opts.APIVersions}
}

// sourceKind detects the renderer the way render.Manifests does.
func sourceKind(opts Options) string {
	switch {
	case opts.Helm != nil:
		return SourceHelm
	case opts.Kustomize != nil:
		return SourceKustomize
	case isFile(filepath.Join(opts.SourceDir, "Chart.yaml")):
		return SourceHelm
	case kustomizationFile(opts.SourceDir) != "":
		return SourceKustomize
	}
	return SourcePlain
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// kustomizationFile is the kustomization in dir, or "".
func kustomizationFile(dir string) string {
	for _, name := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		if p := filepath.Join(dir, name); isFile(p) {
			return p
		}
	}
	return ""
}

// target is one object to edit, with Git's rendering of it.
type target struct {
	ref      ObjectRef
	edits    []*Edit
	manifest render.Manifest
	// fallback asks the writer for its second way, after the first did not
	// render as expected: a kustomize patch with whole lists.
	fallback bool
}

// before is Git's object, rendered from the working tree.
func (t *target) before() map[string]any { return t.manifest.Object.Object }

// match finds each edit's object among the rendered manifests.
func match(edits []Edit, manifests []render.Manifest) ([]*target, []Skip) {
	var targets []*target
	byRef := map[ObjectRef]*target{}
	var skipped []Skip
	for i := range edits {
		e := &edits[i]
		if t, ok := byRef[e.Object]; ok {
			t.edits = append(t.edits, e)
			continue
		}
		m, ok := findManifest(manifests, e.Object)
		if !ok {
			skipped = append(skipped, Skip{Edit: *e, Reason: "the working tree's source does not declare this object"})
			continue
		}
		t := &target{ref: e.Object, edits: []*Edit{e}, manifest: m}
		byRef[e.Object] = t
		targets = append(targets, t)
	}
	return targets, skipped
}

// findManifest finds the manifest of ref. A manifest without a namespace
// matches any: the scanner gives namespaced objects the app's namespace.
func findManifest(manifests []render.Manifest, ref ObjectRef) (render.Manifest, bool) {
	for _, m := range manifests {
		if sameObject(m.Object.GetAPIVersion(), m.Object.GetKind(), m.Object.GetNamespace(), m.Object.GetName(), ref) {
			return m, true
		}
	}
	return render.Manifest{}, false
}

func sameObject(apiVersion, kind, ns, name string, ref ObjectRef) bool {
	g := ObjectRef{APIVersion: apiVersion}.group()
	return g == ref.group() && kind == ref.Kind && name == ref.Name && (ns == "" || ref.Namespace == "" || ns == ref.Namespace)
}

// applied is an edit written to a file, in the form the check needs.
type applied struct {
	edit   *Edit
	target *target
	// path is resolved against Git's object; value is what it should hold
	// after the write, or remove.
	path   Path
	value  any
	remove bool
	file   string // absolute
	via    string
}

// writeSet is what one source writer produced.
type writeSet struct {
	files   map[string][]byte // absolute path to new content
	applied []applied
	skipped []Skip
}

func (ws *writeSet) skip(e *Edit, reason string) {
	ws.skipped = append(ws.skipped, Skip{Edit: *e, Reason: reason})
}

// writer writes the edits of a source kind into file contents.
type writer interface {
	write(ctx context.Context, targets []*target) (*writeSet, error)
}

func newWriter(kind string, opts Options, root string, before []render.Manifest) writer {
	switch kind {
	case SourceHelm:
		return &helmWriter{opts: opts, root: root, before: before}
	case SourceKustomize:
		return &kustomizeWriter{opts: opts}
	}
	return &plainWriter{opts: opts}
}

// files writes new contents and can put the old ones back. It writes only
// inside root, through an os.Root, and never through a symlink.
type files struct {
	root    string
	orig    map[string][]byte // nil content: the file did not exist
	modes   map[string]os.FileMode
	written []string
}

// inTree is p relative to the root, refused when p is outside it or a
// symlink is on the way to it (the file itself or a folder above it).
func (f *files) inTree(p string) (string, error) {
	rel, err := filepath.Rel(f.root, p)
	if err != nil || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%s is outside the working tree %s: refusing to write it", p, f.root)
	}
	at := f.root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		at = filepath.Join(at, part)
		fi, err := os.Lstat(at)
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			target, _ := os.Readlink(at)
			return "", fmt.Errorf("%s is a symlink (to %s): refusing to write %s through it", filepath.ToSlash(mustRel(f.root, at)), target, filepath.ToSlash(rel))
		}
	}
	return rel, nil
}

func mustRel(root, p string) string {
	if rel, err := filepath.Rel(root, p); err == nil {
		return rel
	}
	return p
}

func (f *files) write(contents map[string][]byte) error {
	if f.orig == nil {
		f.orig, f.modes = map[string][]byte{}, map[string]os.FileMode{}
	}
	root, err := os.OpenRoot(f.root)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, p := range sortedKeys(contents) {
		rel, err := f.inTree(p)
		if err != nil {
			return err
		}
		if _, seen := f.orig[p]; !seen {
			old, err := root.ReadFile(rel)
			switch {
			case err == nil:
				f.orig[p] = old
			case errors.Is(err, os.ErrNotExist):
				f.orig[p] = nil
			default:
				return err
			}
			f.written = append(f.written, p)
		}
		mode := os.FileMode(0o644)
		if fi, err := root.Lstat(rel); err == nil {
			mode = fi.Mode().Perm()
		}
		if _, seen := f.modes[p]; !seen {
			f.modes[p] = mode
		}
		if err := root.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
			return err
		}
		if err := root.WriteFile(rel, contents[p], mode); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
	}
	return nil
}

// restore puts back what write replaced and removes what it created.
func (f *files) restore() error {
	var errs []error
	for _, p := range f.written {
		if old := f.orig[p]; old != nil {
			errs = append(errs, os.WriteFile(p, old, f.modes[p]))
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	f.written, f.orig, f.modes = nil, nil, nil
	return errors.Join(errs...)
}

// paths are the files written whose content changed.
func (f *files) paths() []string {
	var out []string
	for _, p := range f.written {
		now, err := os.ReadFile(p)
		if err == nil && string(now) != string(f.orig[p]) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
