package breakglass

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/calricon/driftscan/contract"
)

// The contract admission policies (package contract) read break-glass from
// one ConfigMap that their bindings reference: its data maps an app name to
// the namespaces, space-separated, in which the contract's rules limited to
// break-glass apply to that app's objects. Suspend records the app there
// (Lift), resume and expiry remove it (Unlift, Prune). When the ConfigMap
// does not exist no contract policy is installed, and there is nothing to
// lift.

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// Lift records that t's suspension lifts the contract for its app in the
// app's destination namespaces. It returns nil and no error when the params
// ConfigMap does not exist.
func Lift(ctx context.Context, client dynamic.Interface, params contract.ParamsRef, t Target, dryRun bool) (*Change, error) {
	obj, err := client.Resource(t.Resource).Namespace(t.Namespace).Get(ctx, t.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", t, err)
	}
	nss := Destinations(obj)
	return patchParams(ctx, client, params, t.Name, strings.Join(nss, " "),
		fmt.Sprintf("data.%s = %q (the contract's break-glass rules apply to %s in %s)", t.Name, strings.Join(nss, " "), t.Name, strings.Join(nss, ", ")), dryRun)
}

// Unlift removes t's app from the params ConfigMap. It returns nil and no
// error when the ConfigMap does not exist or does not name the app.
func Unlift(ctx context.Context, client dynamic.Interface, params contract.ParamsRef, t Target, dryRun bool) (*Change, error) {
	cm, err := client.Resource(configMaps).Namespace(params.Namespace).Get(ctx, params.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get ConfigMap %s/%s: %w", params.Namespace, params.Name, err)
	}
	if _, ok, _ := unstructured.NestedString(cm.Object, "data", t.Name); !ok {
		return nil, nil
	}
	return patchParams(ctx, client, params, t.Name, nil, fmt.Sprintf("data.%s removed (the contract applies in full again)", t.Name), dryRun)
}

// Prune removes every app from the params ConfigMap whose suspension is no
// longer active at now: resumed, or past its deadline. The scheduled scan
// calls it, so that an expired suspension stops lifting the contract even
// before anyone resumes it. It returns the apps it removed.
func Prune(ctx context.Context, client dynamic.Interface, params contract.ParamsRef, active []Suspension, now time.Time) ([]string, error) {
	cm, err := client.Resource(configMaps).Namespace(params.Namespace).Get(ctx, params.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get ConfigMap %s/%s: %w", params.Namespace, params.Name, err)
	}
	live := map[string]bool{}
	for _, s := range active {
		if !s.Expired(now) {
			live[s.Target.Name] = true
		}
	}
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	var gone []string
	remove := map[string]any{}
	for app := range data {
		if !live[app] {
			gone = append(gone, app)
			remove[app] = nil
		}
	}
	if len(gone) == 0 {
		return nil, nil
	}
	slices.Sort(gone)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": cm.GetResourceVersion()}, "data": remove})
	if err != nil {
		return nil, err
	}
	if _, err := client.Resource(configMaps).Namespace(params.Namespace).Patch(ctx, params.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return nil, fmt.Errorf("patch ConfigMap %s/%s: %w", params.Namespace, params.Name, err)
	}
	return gone, nil
}

// patchParams sets (value a string) or removes (value nil) one key of the
// params ConfigMap.
func patchParams(ctx context.Context, client dynamic.Interface, params contract.ParamsRef, key string, value any, field string, dryRun bool) (*Change, error) {
	ri := client.Resource(configMaps).Namespace(params.Namespace)
	if _, err := ri.Get(ctx, params.Name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("get ConfigMap %s/%s: %w", params.Namespace, params.Name, err)
	}
	data, err := json.Marshal(map[string]any{"data": map[string]any{key: value}})
	if err != nil {
		return nil, err
	}
	opts := metav1.PatchOptions{FieldManager: FieldManager}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	if _, err := ri.Patch(ctx, params.Name, types.MergePatchType, data, opts); err != nil {
		return nil, fmt.Errorf("patch ConfigMap %s/%s: %w", params.Namespace, params.Name, err)
	}
	t := Target{Resource: configMaps, Namespace: params.Namespace, Name: params.Name}
	return &Change{Target: t, Patch: data, Fields: []string{field}, DryRun: dryRun}, nil
}

// Destinations are the namespaces a reconciler object deploys into: an
// Application's spec.destination.namespace, a Flux
// object's spec.targetNamespace, else its own namespace.
func Destinations(obj *unstructured.Unstructured) []string {
	var out []string
	add := func(ns string) {
		if ns != "" && !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	if obj.GetKind() == "Application" {
		ns, _, _ := unstructured.NestedString(obj.Object, "spec", "destination", "namespace")
		add(ns)
	} else {
		ns, _, _ := unstructured.NestedString(obj.Object, "spec", "targetNamespace")
		add(ns)
	}
	if len(out) == 0 {
		add(obj.GetNamespace())
	}
	return out
}
