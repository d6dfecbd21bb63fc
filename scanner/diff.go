package scanner

import (
	"encoding/base64"
	"fmt"
	"maps"
	"reflect"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/report"
)

// change is one raw difference between Git and live, before ownership and
// classification.
type change struct {
	Path fieldpath.Path
	Type report.Type
	// NewKey: an Added path that is a keyed list item or a map key.
	NewKey bool
	// Git and Live are the values; present says whether each side has one.
	Git, Live               any
	GitPresent, LivePresent bool
	// in is the object the change's pointer points into: live, or Git for
	// Removed.
	in map[string]any
}

// pointer is the change's RFC 6901 pointer into live (into Git for
// Removed).
func (ch change) pointer() string { return pointer(ch.in, ch.Path) }

// lastApplied is kubectl's client-side apply record: never drift.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// neverDrift are metadata fields the server manages.
var neverDrift = []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"}

// normalize returns a copy of obj without status, server-managed metadata
// and kubectl's last-applied annotation, with nulls and empty collections
// removed. For a Secret it folds stringData into data, as the server does.
func normalize(obj *unstructured.Unstructured) map[string]any {
	return PruneEmpty(withoutServerFields(obj)).(map[string]any)
}

// normalizeSent is normalize for Git's object as its applier sent it,
// compared with live (normalized), done in place: the scan is done with
// Git's object once it is compared, so its content is taken, not copied.
// An empty map it sent is kept, because the applier owns it and what the
// server filled in below it is a default: Flux sends a Deployment's
// `strategy: {}` whatever Git says (see applied_flux.go), and kubectl and
// Argo CD send the one Git holds (`kubectl create --dry-run=client -o
// yaml` writes it), so an empty map Git declares is kept where live holds
// a non-empty one (pruneEmptyAgainst). Nulls are removed all the same;
// nulls is where they were (see nullMark), nil when nowhere.
func normalizeSent(how config.AppliedAs, obj *unstructured.Unstructured, live map[string]any) (git, nulls map[string]any) {
	out := serverFieldsRemoved(obj, obj.Object)
	if how == config.AppliedAsFlux {
		_, n := pruneNulls(out)
		nulls, _ = n.(map[string]any)
		return out, nulls
	}
	return pruneEmptyAgainst(out, live)
}

// normalizeLive is normalize for a live object that the scan decoded for
// this compare alone (decodeLive: without status or managedFields, and
// pruned), done in place: nothing reads the server's fields of it after
// (its uid and resourceVersion were read from its bytes). Only kubectl's
// last-applied annotation, which objectFacts still reads from the live
// object, is removed from copies of the metadata and annotations. What
// decoding pruned is not walked again; only the metadata, which removing
// the server's fields may have emptied, is pruned.
func normalizeLive(l *unstructured.Unstructured) map[string]any {
	out, copied := l.Object, false
	if md, ok := out["metadata"].(map[string]any); ok {
		if ann, ok := md["annotations"].(map[string]any); ok {
			if _, ok := ann[lastApplied]; ok {
				md = maps.Clone(md)
				md["annotations"] = maps.Clone(ann)
				out, copied = maps.Clone(out), true
				out["metadata"] = md
			}
		}
	}
	out = serverFieldsRemoved(l, out)
	if md, ok := out["metadata"]; ok && empty(PruneEmpty(md)) {
		if !copied {
			out = maps.Clone(out)
		}
		delete(out, "metadata")
	}
	return out
}

// withoutServerFields is a copy of obj without status, server-managed
// metadata and kubectl's last-applied annotation, a Secret's stringData
// folded into data.
func withoutServerFields(obj *unstructured.Unstructured) map[string]any {
	return serverFieldsRemoved(obj, runtime.DeepCopyJSON(obj.Object))
}

// serverFieldsRemoved is withoutServerFields's work on out, a copy of
// obj's content.
func serverFieldsRemoved(obj *unstructured.Unstructured, out map[string]any) map[string]any {
	delete(out, "status")
	if md, ok := out["metadata"].(map[string]any); ok {
		for _, f := range neverDrift {
			delete(md, f)
		}
		if ann, ok := md["annotations"].(map[string]any); ok {
			delete(ann, lastApplied)
		}
	}
	if obj.GetKind() == "Secret" && obj.GroupVersionKind().Group == "" {
		if sd, ok := out["stringData"].(map[string]any); ok {
			data, _ := out["data"].(map[string]any)
			if data == nil {
				data = map[string]any{}
			}
			for k, v := range sd {
				data[k] = base64.StdEncoding.EncodeToString([]byte(fmt.Sprint(v)))
			}
			out["data"] = data
			delete(out, "stringData")
		}
	}
	return out
}

// diff compares Git's object with the live one field by field, with the
// schema of their kind, and returns the differences that are not just two
// forms of one value. Added paths are reduced to their topmost node: an
// injected container is one change, not one per field.
//
// Where the two are one value, as they are for most ConfigMaps, RBAC
// objects and custom resources a scan meets, there is nothing to find and
// neither side is walked. Otherwise walkCompare walks the two, passing over
// what they hold as one value (a Deployment's name, labels, selector and
// replicas, most of the time). Where it gives up, what the two hold as one
// value is left out (withoutSame) of structured-merge-diff's typed compare,
// which finds nothing in it.
func diff(t *typer, gvk schema.GroupVersionKind, desired, live map[string]any) ([]change, error) {
	if sameValue(desired, live) {
		return nil, nil
	}
	if rt, ok := t.rootType(gvk); ok {
		if cmp, ok := walkCompare(rt, gvk, desired, live); ok {
			return changesOf(cmp, desired, live), nil
		}
	}
	typedGit, typedLive, _, _ := withoutSame(desired, live, true)
	cmp, err := smdCompare(t, gvk, live, typedGit, typedLive)
	if err != nil {
		return nil, err
	}
	return changesOf(cmp, desired, live), nil
}

// smdCompare is structured-merge-diff's typed compare of typedGit and
// typedLive, with what it found read as a comparison.
func smdCompare(t *typer, gvk schema.GroupVersionKind, live, typedGit, typedLive map[string]any) (comparison, error) {
	tvGit, err := t.toTyped(typedGit, gvk.GroupVersion())
	if err != nil {
		return comparison{}, fmt.Errorf("git: %w", err)
	}
	tvLive, err := t.liveTyped(typedLive, gvk, tvGit)
	if err != nil {
		return comparison{}, fmt.Errorf("live: %w", err)
	}
	out, err := compareTyped(tvGit, tvLive)
	if err != nil {
		// Say what typing the live object would have said of it.
		if _, verr := t.toTyped(live, gvk.GroupVersion()); verr != nil {
			return comparison{}, fmt.Errorf("live: %w", verr)
		}
		return comparison{}, fmt.Errorf("compare: %w", err)
	}
	return out, nil
}

// compareTyped is smd's compare of two typed values, read as a comparison.
func compareTyped(tvGit, tvLive *typed.TypedValue) (comparison, error) {
	cmp, err := tvGit.Compare(tvLive)
	if err != nil {
		return comparison{}, err
	}
	out := comparison{added: addedUnits(tvLive, cmp.Added)}
	cmp.Modified.Leaves().Iterate(func(p fieldpath.Path) {
		out.modified = append(out.modified, typedLeaf{path: p.Copy(), typeName: kindAt(tvLive, p).TypeName})
	})
	topmost(cmp.Removed).Iterate(func(p fieldpath.Path) {
		out.removed = append(out.removed, p.Copy())
	})
	return out, nil
}

// changesOf are the changes of a comparison: the modified leaves whose
// values are not two forms of one, what Git has that live does not (unless
// Git's is empty), and the added units, with values read from desired and
// live.
func changesOf(cmp comparison, desired, live map[string]any) []change {
	// Most changes are added units (a Deployment's dozen defaults): the
	// slice is made once for them, not grown change by change.
	out := make([]change, 0, len(cmp.added)+len(cmp.modified)+len(cmp.removed))
	for _, m := range cmp.modified {
		g, gok := lookup(desired, m.path)
		l, lok := lookup(live, m.path)
		if equivalent(g, l, m.typeName) {
			continue
		}
		out = append(out, change{Path: m.path, Type: report.TypeChanged, Git: g, Live: l, GitPresent: gok, LivePresent: lok, in: live})
	}
	for _, p := range cmp.removed {
		g, gok := lookup(desired, p)
		if !gok || empty(g) {
			continue
		}
		out = append(out, change{Path: p, Type: report.TypeRemoved, Git: g, GitPresent: true, in: desired})
	}
	for _, u := range cmp.added {
		l, lok := lookup(live, u.path)
		if !lok {
			continue
		}
		out = append(out, change{Path: u.path, Type: report.TypeAdded, NewKey: u.kind.NewKey, Live: l, LivePresent: true, in: live})
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

type unit struct {
	path fieldpath.Path
	kind nodeKind
}

// addedUnits reduces the added paths to the nodes a person would name: the
// topmost added field, except that an added map or list (annotations Git
// never had, an env list) is reported as its items, so that a webhook's new
// annotation is a new key rather than a new struct field. It walks the
// set's tree, parents before children as Set.Iterate visits them, so each
// node's type is resolved from its parent's and what lies under a reported
// node is never visited.
func addedUnits(tv *typed.TypedValue, added *fieldpath.Set) []unit {
	var out []unit
	var paths pathSlab
	addedUnitsUnder(added, nil, cursorAt(tv), false, false, &paths, &out)
	return out
}

// pathSlab hands out paths cut from shared arrays: an object's added units
// (a Deployment has a dozen defaults) are then a few allocations, not one
// each.
type pathSlab struct{ free fieldpath.Path }

// path is prefix with pe appended, in the slab; its capacity ends at its
// length, so appending to it never writes over another's.
func (ps *pathSlab) path(prefix fieldpath.Path, pe fieldpath.PathElement) fieldpath.Path {
	n := len(prefix) + 1
	if cap(ps.free)-len(ps.free) < n {
		ps.free = make(fieldpath.Path, 0, max(64, n))
	}
	start := len(ps.free)
	ps.free = append(append(ps.free, prefix...), pe)
	return ps.free[start:len(ps.free):len(ps.free)]
}

// addedUnitsUnder is addedUnits for the paths of s below prefix, at cursor
// c. parentAdded: prefix is itself an added path; parentCollection: it is
// an added collection, whose items are reported rather than it.
func addedUnitsUnder(s *fieldpath.Set, prefix fieldpath.Path, c kindCursor, parentAdded, parentCollection bool, paths *pathSlab, out *[]unit) {
	// A member under an added parent that is not a collection is part of
	// what its parent's unit names; any other member is a unit of its own
	// unless it is a collection.
	judged := !parentAdded || parentCollection
	if judged {
		s.Members.Iterate(func(pe fieldpath.PathElement) {
			if k := c.step(pe).kind(); !k.Collection {
				*out = append(*out, unit{path: paths.path(prefix, pe), kind: k})
			}
		})
	}
	s.Children.Iterate(func(pe fieldpath.PathElement) {
		cc := c.step(pe)
		added, collection := s.Members.Has(pe), false
		if added && judged {
			if collection = cc.kind().Collection; !collection {
				return // reported above: what is under it is covered
			}
		}
		sub, _ := s.Children.Get(pe)
		addedUnitsUnder(sub, append(prefix, pe), cc, added, collection, paths, out)
	})
}

// topmost returns the paths of s whose parent is not in s.
func topmost(s *fieldpath.Set) *fieldpath.Set {
	out := &fieldpath.Set{}
	s.Iterate(func(p fieldpath.Path) {
		if len(p) > 1 && s.Has(p[:len(p)-1]) {
			return
		}
		out.Insert(p)
	})
	return out
}

// sameValue reports whether a and b, decoded JSON or YAML (maps, slices,
// strings, numbers, booleans, nil), are one value of the same Go types,
// as reflect.DeepEqual would for them, without reflection; unlike it, a
// nil and an empty map (or slice) are one value, as they are to the
// typed compare (and normalizing has pruned both).
func sameValue(a, b any) bool { return EqualWith(a, b, sameScalar) }

// EqualWith reports whether a and b, decoded JSON or YAML, are maps and
// lists of one shape, key for key and item for item, whose other values
// same finds equal.
func EqualWith(a, b any, same func(a, b any) bool) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, av := range a {
			if bv, ok := b[k]; !ok || !EqualWith(av, bv, same) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !EqualWith(a[i], b[i], same) {
				return false
			}
		}
		return true
	}
	return same(a, b)
}

// sameScalar is reflect.DeepEqual for a value that is not a map or a
// list, without reflection for the types a decoder makes.
func sameScalar(a, b any) bool {
	switch a := a.(type) {
	case string:
		b, ok := b.(string)
		return ok && a == b
	case int64:
		b, ok := b.(int64)
		return ok && a == b
	case bool:
		b, ok := b.(bool)
		return ok && a == b
	case nil:
		return b == nil
	}
	return reflect.DeepEqual(a, b)
}

// withoutSame returns a and b without the members they hold as one value,
// at every level reached from the root through maps alone, and whether it
// left anything out (changed) and whether a and b are one value (same).
// What is one value on both sides holds no difference, so the typed
// compare need not type or walk it; what a map holds on one side only, and
// every list, stays (a keyed list's items are matched by fields that may
// be the same on both sides, so no list is cut into). At the root,
// apiVersion and kind stay: typing reads them. a and b are not changed: a
// map that loses a member, or holds one that did, is a new map.
func withoutSame(a, b map[string]any, root bool) (ra, rb map[string]any, changed, same bool) {
	ra, rb, same = a, b, len(a) == len(b)
	for k, av := range a {
		bv, ok := b[k]
		if !ok {
			same = false
			continue
		}
		if root && (k == "apiVersion" || k == "kind") {
			same = same && sameValue(av, bv)
			continue
		}
		am, aIsMap := av.(map[string]any)
		bm, bIsMap := bv.(map[string]any)
		drop := true // one value on both sides; else keepA and keepB stay
		var keepA, keepB map[string]any
		switch {
		case aIsMap && bIsMap && sameValue(am, bm):
			// Dropped whole, without copying what is under it.
		case aIsMap && bIsMap:
			var cut bool
			keepA, keepB, cut, drop = withoutSame(am, bm, false)
			if !drop && !cut {
				same = false
				continue
			}
		case !aIsMap && !bIsMap && sameValue(av, bv):
		default:
			same = false
			continue
		}
		if !changed {
			ra, rb, changed = maps.Clone(a), maps.Clone(b), true
		}
		if drop {
			delete(ra, k)
			delete(rb, k)
		} else {
			same = false
			ra[k], rb[k] = keepA, keepB
		}
	}
	return ra, rb, changed, same
}

// pathText is p.String(), built in one buffer: a cold scan names each of
// its 24,000 dismissed defaults' paths, and smd's String, which joins a
// string per element and formats keys with fmt, was 3.5% of its CPU.
// Elements other than field names, indexes and keys of strings and ints
// are left to smd.
func pathText(p fieldpath.Path) string {
	n := 0
	for _, e := range p {
		if e.FieldName != nil {
			n += 1 + len(*e.FieldName)
		} else {
			n += 24
		}
	}
	b := make([]byte, 0, n)
	for _, e := range p {
		switch {
		case e.FieldName != nil:
			b = append(append(b, '.'), *e.FieldName...)
		case e.Key != nil:
			b = append(b, '[')
			for i, k := range *e.Key {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(append(b, k.Name...), '=')
				switch v := k.Value; {
				case v.IsString():
					b = strconv.AppendQuote(b, v.AsString())
				case v.IsInt():
					b = strconv.AppendInt(b, v.AsInt(), 10)
				default:
					b = append(b, value.ToString(v)...)
				}
			}
			b = append(b, ']')
		case e.Value == nil && e.Index != nil:
			b = append(strconv.AppendInt(append(b, '['), int64(*e.Index), 10), ']')
		default:
			b = append(b, e.String()...)
		}
	}
	return string(b)
}
