package scanner

import (
	"encoding/json"
	"regexp"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/calricon/driftscan/classify"
	"github.com/calricon/driftscan/report"
)

// objectFacts answers what classify's dismissals ask of one object's
// changes. What is costly (the last-applied configuration parsed, Git's
// object passed through its API type) is computed once, on first need.
type objectFacts struct {
	typer *typer
	gvk   schema.GroupVersionKind
	git   map[string]any // normalized, as compared
	nulls map[string]any // where Git's object held nulls (see nullMark)
	live  *unstructured.Unstructured

	lastOnce    sync.Once
	lastApplied map[string]any // nil when the object has none
	typedOnce   sync.Once
	typed       map[string]any // nil when the kind has no built-in Go type
}

// fill sets the facts of ch on cc. An Added whole value where Git
// declared an empty list (emptyMark) gets that list as Git's value, on ch
// too: the finding records it.
func (of *objectFacts) fill(cc *classify.Change, ch *change) {
	cc.ZeroGit = ch.GitPresent && zeroValue(ch.Git)
	// Whether kubectl apply deletes the field once Git drops it: for an
	// Added one, and a Changed .replicas (operatorHint: the one Changed
	// field that asks).
	if ch.Type == report.TypeAdded || ch.Type == report.TypeChanged && strings.HasSuffix(cc.Path, ".replicas") {
		if last := of.lastAppliedConfig(); last != nil {
			_, cc.InLastApplied = lookup(last, ch.Path)
		}
	}
	switch ch.Type {
	case report.TypeRemoved:
		if cc.ZeroGit {
			cc.Omitted = of.dropsZero(*ch)
		}
	case report.TypeChanged:
		extra, ok := within(ch.Live, ch.Git)
		if !ok || !of.sentAsGit(*ch) || !defaultsHold(of.typer.schemaAt(of.gvk, ch.Path), extra, ch.Git) {
			return
		}
		cc.Contained = true
		if !empty(extra) {
			data, err := json.Marshal(extra)
			if err == nil {
				cc.Filled = string(data)
			}
		}
	case report.TypeAdded:
		cc.NullGit, cc.EmptyGit = marksAt(of.nulls, ch.Path)
		if cc.EmptyGit {
			ch.Git, ch.GitPresent = []any{}, true
			cc.Git = text(ch.Git, true)
		}
		if strings.HasSuffix(cc.Path, ".imagePullPolicy") {
			// The one default that depends on it; every other Added
			// field (20,000 defaults on the bench's 5,000 objects)
			// skips the path match and the walk.
			cc.ContainerImage = of.containerImage(cc.Path)
		}
	}
}

// inContainer matches the text path of a field in a pod spec's container:
// the spec's path, the list and the container's name.
var inContainer = regexp.MustCompile(`^((?:\.[A-Za-z]+)*)\.(containers|initContainers|ephemeralContainers)\[name="([^"\\]*)"\]\.`)

// containerImage is the live image of the container the text path is in,
// "" when it is in none or the container has no image.
func (of *objectFacts) containerImage(path string) string {
	m := inContainer.FindStringSubmatch(path)
	if m == nil {
		return ""
	}
	fields := append(strings.Split(strings.TrimPrefix(m[1], "."), "."), m[2])
	list, _, _ := unstructured.NestedFieldNoCopy(of.live.Object, fields...)
	items, _ := list.([]any)
	for _, c := range items {
		if c, ok := c.(map[string]any); ok && c["name"] == m[3] {
			image, _ := c["image"].(string)
			return image
		}
	}
	return ""
}

// lastAppliedConfig is kubectl's last-applied-configuration of the live
// object, nil when it has none or it cannot be read.
func (of *objectFacts) lastAppliedConfig() map[string]any {
	of.lastOnce.Do(func() {
		raw := of.live.GetAnnotations()[lastApplied]
		if raw == "" {
			return
		}
		var m map[string]any
		if err := utiljson.Unmarshal([]byte(raw), &m); err == nil {
			of.lastApplied = m
		}
	})
	return of.lastApplied
}

// sentAsGit reports whether Git's value at the change is what the applier
// last sent, as far as the object tells: a client-side applier's
// last-applied configuration holds the same value, or there is none to
// tell (server-side appliers keep no copy; ownership speaks for them).
func (of *objectFacts) sentAsGit(ch change) bool {
	last := of.lastAppliedConfig()
	if last == nil {
		return true
	}
	sent, ok := lookup(last, ch.Path)
	if !ok {
		return true
	}
	_, same := within(sent, ch.Git)
	_, back := within(ch.Git, sent)
	return same && back
}

// dropsZero reports whether the API type does not store Git's zero value
// at the change: decoded into the kind's Go type and encoded again, as the
// API server does, Git's object has no such field any more (a non-pointer
// field with omitempty: minReadySeconds: 0, hostNetwork: false,
// subPath: "").
func (of *objectFacts) dropsZero(ch change) bool {
	of.typedOnce.Do(func() {
		obj, err := scheme.Scheme.New(of.gvk)
		if err != nil {
			return // not a built-in kind: a CRD stores what it is sent
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(runtime.DeepCopyJSON(of.git), obj); err != nil {
			return
		}
		out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err == nil {
			of.typed = out
		}
	})
	if of.typed == nil {
		return false
	}
	v, ok := lookup(of.typed, ch.Path)
	return !ok || empty(PruneEmpty(runtime.DeepCopyJSONValue(v)))
}

// zeroValue reports whether v is a zero value: 0, false, "", or a map or
// list of nothing but zero values.
func zeroValue(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case bool:
		return !t
	case string:
		return t == ""
	case int64:
		return t == 0
	case int32:
		return t == 0
	case int:
		return t == 0
	case float64:
		return t == 0
	case map[string]any:
		for _, c := range t {
			if !zeroValue(c) {
				return false
			}
		}
		return true
	case []any:
		for _, c := range t {
			if !zeroValue(c) {
				return false
			}
		}
		return true
	}
	return false
}

// within reports whether outer holds everything inner declares: every key of
// inner is in outer with an equivalent value (or is a zero value outer
// leaves out), lists item by item at the same length. extra is what outer
// has beyond inner, in the shape of inner (for a list, one entry per item).
func within(outer, inner any) (extra any, ok bool) {
	switch in := inner.(type) {
	case map[string]any:
		out, isMap := outer.(map[string]any)
		if !isMap {
			return nil, false
		}
		more := map[string]any{}
		for k, iv := range in {
			ov, present := out[k]
			if !present {
				if zeroValue(iv) {
					continue
				}
				return nil, false
			}
			sub, ok := within(ov, iv)
			if !ok {
				return nil, false
			}
			if !empty(sub) {
				more[k] = sub
			}
		}
		for k, ov := range out {
			if _, declared := in[k]; !declared {
				more[k] = ov
			}
		}
		return more, true
	case []any:
		out, isList := outer.([]any)
		if !isList || len(out) != len(in) {
			return nil, false
		}
		more := make([]any, len(in))
		filled := false
		for i := range in {
			sub, ok := within(out[i], in[i])
			if !ok {
				return nil, false
			}
			if empty(sub) {
				sub = map[string]any{}
			} else {
				filled = true
			}
			more[i] = sub
		}
		if !filled {
			return nil, true
		}
		return more, true
	default:
		if equivalent(inner, outer, "") || equivalent(inner, outer, quantityType) {
			return nil, true
		}
		return nil, false
	}
}
