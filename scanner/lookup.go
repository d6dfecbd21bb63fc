package scanner

import (
	"context"
	"encoding/base64"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/calricon/driftscan/report"
)

// helmLookup is Helm's lookup, as helm install and upgrade and Flux's
// helm-controller give it to a chart (engine.newLookupFunction), over the
// scan's client: a GET of the named object, or a LIST of the kind (in the
// namespace, or everywhere without one) when no name is given; never a
// write. An object or kind that does not exist is an empty map, as in
// Helm; any other error fails the render, as it fails the applier's.
//
// Two answers differ from Helm's, both an empty map (what `helm template`
// gives) with a warning on the app: an object the scan's identity may not
// read, and an object of a namespaced kind outside the release's
// namespace (another namespace, or every one): the scan reads a chart's
// lookups only where the release is, so that a tenant's chart cannot have
// it read another tenant's objects into its report. The values of each
// Secret the chart reads are the app's secrets from then on
// (masker.addSecrets): a chart may decode one into a ConfigMap.
type helmLookup struct {
	ctx    context.Context
	c      *api
	masker *masker
	app    int
	name   string
	// namespace is the release's.
	namespace string
	warn      func(report.Warning)
	mu        sync.Mutex
	// warned: one warning per object the lookup could not read.
	warned map[string]bool
	// answers are the lookups already sent, by what: the app's chart is
	// rendered again (to find what differs between renders, for a
	// pending sync) and reads the cluster once. Each caller gets a copy,
	// since a template may change a map it was given (sprig's set).
	answers map[string]lookupAnswer
}

type lookupAnswer struct {
	content map[string]any
	err     error
}

func (l *helmLookup) lookup(apiVersion, kind, namespace, name string) (map[string]any, error) {
	what := fmt.Sprintf("lookup %q %q %q %q", apiVersion, kind, namespace, name)
	l.mu.Lock()
	a, ok := l.answers[what]
	l.mu.Unlock()
	if !ok {
		a.content, a.err = l.send(what, apiVersion, kind, namespace, name)
		l.mu.Lock()
		if l.answers == nil {
			l.answers = map[string]lookupAnswer{}
		}
		l.answers[what] = a
		l.mu.Unlock()
	}
	return runtime.DeepCopyJSON(a.content), a.err
}

// send reads what the lookup asks for, once.
func (l *helmLookup) send(what, apiVersion, kind, namespace, name string) (map[string]any, error) {
	gvk := schema.FromAPIVersionAndKind(apiVersion, kind)
	m, err := l.c.mapping(gvk)
	if err != nil {
		return map[string]any{}, fmt.Errorf("%s: %w", what, err)
	}
	res := l.c.dynamic.Resource(m.Resource)
	var ri dynamic.ResourceInterface = res
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if namespace == "" && name != "" {
			// Helm GETs the name at the kind's cluster-wide path, where
			// the API server finds no object of a namespaced kind.
			return map[string]any{}, nil
		}
		if namespace != l.namespace {
			l.unread(what, fmt.Sprintf("the chart's %s was not sent: the scan reads a chart's lookups only in its release's namespace %s (and of cluster-scoped kinds); it rendered with nothing there, as helm template does, so fields the chart takes from it may show as drift", what, l.namespace))
			return map[string]any{}, nil
		}
		ri = res.Namespace(namespace)
	}
	var content map[string]any
	switch {
	case name != "":
		var obj interface{ UnstructuredContent() map[string]any }
		if obj, err = ri.Get(l.ctx, name, metav1.GetOptions{}); err == nil {
			content = obj.UnstructuredContent()
		}
	default:
		var list interface{ UnstructuredContent() map[string]any }
		if list, err = ri.List(l.ctx, metav1.ListOptions{}); err == nil {
			content = list.UnstructuredContent()
		}
	}
	switch {
	case apierrors.IsNotFound(err):
		return map[string]any{}, nil
	case apierrors.IsForbidden(err):
		l.unread(what, fmt.Sprintf("the chart's %s is forbidden to the scan's identity, where its applier reads it: it rendered with nothing there, as helm template does, so fields the chart takes from it may show as drift", what))
		return map[string]any{}, nil
	case err != nil:
		return map[string]any{}, fmt.Errorf("%s: %w", what, err)
	}
	if m.Resource.GroupResource() == (schema.GroupResource{Resource: "secrets"}) {
		l.masker.addSecrets(l.app, secretValues(content))
	}
	return content, nil
}

// unread warns, once per lookup, that it gave an empty map in place of
// what the applier reads.
func (l *helmLookup) unread(what, message string) {
	l.mu.Lock()
	seen := l.warned[what]
	if l.warned == nil {
		l.warned = map[string]bool{}
	}
	l.warned[what] = true
	l.mu.Unlock()
	if !seen {
		l.warn(report.Warning{Code: report.WarnLookupUnread, App: l.name, Message: message})
	}
}

// secretValues are the data values of a Secret, or of every Secret of a
// list: each as the API gives it (base64) and decoded.
func secretValues(content map[string]any) []string {
	var out []string
	add := func(obj map[string]any) {
		data, _ := obj["data"].(map[string]any)
		for _, v := range data {
			s, ok := v.(string)
			if !ok {
				continue
			}
			out = append(out, s)
			if b, err := base64.StdEncoding.DecodeString(s); err == nil {
				out = append(out, string(b))
			}
		}
	}
	if items, ok := content["items"].([]any); ok {
		for _, it := range items {
			if obj, ok := it.(map[string]any); ok {
				add(obj)
			}
		}
		return out
	}
	add(content)
	return out
}
