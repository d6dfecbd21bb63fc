package backport

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/calricon/driftscan/render"
	"github.com/calricon/driftscan/report"
	"github.com/calricon/driftscan/scanner"
)

// verify checks a write by its rendering: each target must render as Git's
// object with its applied edits made, and every other object as before. It
// returns why each failing target failed.
func verify(before, after []render.Manifest, targets []*target, done []applied) map[*target]string {
	failed := map[*target]string{}
	for _, t := range targets {
		want := deepCopy(t.before())
		for _, a := range done {
			if a.target != t {
				continue
			}
			if a.remove {
				del(want, a.path)
				continue
			}
			var err error
			if want, err = set(want, a.path, deepCopy(a.value)); err != nil {
				failed[t] = fmt.Sprintf("%s: %v", a.path, err)
			}
		}
		m, ok := findManifest(after, t.ref)
		if !ok {
			failed[t] = "the object is gone from the rendering"
			continue
		}
		if diffs := differences(prune(want), prune(deepCopy(m.Object.Object)), "", 3); len(diffs) > 0 {
			failed[t] = "rendered " + strings.Join(diffs, ", ")
		}
	}
	for _, b := range before {
		ref := ObjectRef{APIVersion: b.Object.GetAPIVersion(), Kind: b.Object.GetKind(), Namespace: b.Object.GetNamespace(), Name: b.Object.GetName()}
		if _, isTarget := findTarget(targets, ref); isTarget {
			continue
		}
		a, ok := findManifest(after, ref)
		var diffs []string
		switch {
		case !ok:
			diffs = []string{"gone"}
		default:
			diffs = differences(prune(deepCopy(b.Object.Object)), prune(deepCopy(a.Object.Object)), "", 3)
		}
		if len(diffs) == 0 {
			continue
		}
		reason := fmt.Sprintf("the write also changed %s (%s)", ref, strings.Join(diffs, ", "))
		var blamed bool
		for _, t := range targets {
			if t.ref.Kind == ref.Kind && t.ref.Name == ref.Name {
				failed[t], blamed = reason, true
			}
		}
		if !blamed {
			for _, t := range targets {
				failed[t] = reason
			}
		}
	}
	return failed
}

func findTarget(targets []*target, ref ObjectRef) (*target, bool) {
	for _, t := range targets {
		if sameObject(t.ref.APIVersion, t.ref.Kind, t.ref.Namespace, t.ref.Name, ref) ||
			sameObject(ref.APIVersion, ref.Kind, ref.Namespace, ref.Name, t.ref) {
			return t, true
		}
	}
	return nil, false
}

// differences lists up to n paths where want and got differ, with got's
// value.
func differences(want, got any, at string, n int) []string {
	if n <= 0 {
		return nil
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			break
		}
		var out []string
		keys := sortedKeys(w)
		for k := range g {
			if _, ok := w[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			out = append(out, differences(w[k], g[k], at+"."+k, n-len(out))...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			break
		}
		var out []string
		for i := range w {
			out = append(out, differences(w[i], g[i], at+"["+strconv.Itoa(i)+"]", n-len(out))...)
		}
		return out
	default:
		if sameValue(want, got) {
			return nil
		}
	}
	if equalJSON(want, got) {
		return nil
	}
	if at == "" {
		at = "."
	}
	return []string{fmt.Sprintf("%s = %s (want %s)", at, shortText(got), shortText(want))}
}

func shortText(v any) string {
	if v == nil {
		return "nothing"
	}
	s := report.ValueText(v)
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

// equalJSON compares JSON values, numbers by value.
func equalJSON(a, b any) bool { return scanner.EqualWith(a, b, sameValue) }

// prune removes nulls and empty maps and lists, as the scanner does.
func prune(v any) any { return scanner.PruneEmpty(v) }

func isEmpty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	}
	return false
}

func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, c := range t {
			m[k] = deepCopy(c)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, c := range t {
			l[i] = deepCopy(c)
		}
		return l
	}
	return v
}
