package main

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/fixtures/cluster"
)

// Actor is who drifts an object, and how.
type Actor string

// The actors, as they write in real clusters (see FACTS.md).
const (
	// ActorWebhook: the test webhook injects a sidecar and an annotation into
	// every Deployment of a labelled namespace when it is created.
	ActorWebhook Actor = "webhook"
	// ActorSetImage: a pipeline's `kubectl set image` (manager kubectl-set).
	ActorSetImage Actor = "kubectl-set image"
	// ActorScale: the HPA through the scale subresource
	// (kube-controller-manager), where Git declares replicas.
	ActorScale Actor = "scale subresource"
	// ActorEditConfigMap: a human's `kubectl edit` of a ConfigMap value.
	ActorEditConfigMap Actor = "kubectl-edit ConfigMap"
	// ActorEditRoute: a human's `kubectl edit` of a Route backend weight.
	ActorEditRoute Actor = "kubectl-edit Route"
)

// actors lists them in report order.
var actors = []Actor{ActorWebhook, ActorSetImage, ActorScale, ActorEditConfigMap, ActorEditRoute}

// plan says which objects the bench drifts, by Kind/namespace/name, and by
// which actor. Each drifted object has one actor.
type plan map[string]Actor

// makePlan drifts percent of the estate's objects: every Deployment of the
// webhook's namespaces, then the rest shared evenly by the other actors,
// picked at even strides over the other namespaces.
func makePlan(e *estate, percent float64) plan {
	p := plan{}
	target := int(math.Round(float64(len(e.Objects)) * percent / 100))
	if target == 0 {
		return p
	}
	var deployments, configMaps, routes []*unstructured.Unstructured
	for _, u := range e.Objects {
		if e.Labelled[u.GetNamespace()] {
			if u.GetKind() == "Deployment" {
				p[ref(u)] = ActorWebhook
			}
			continue
		}
		switch u.GetKind() {
		case "Deployment":
			deployments = append(deployments, u)
		case "ConfigMap":
			configMaps = append(configMaps, u)
		case "Route":
			routes = append(routes, u)
		}
	}
	// set image and scale share the Deployments: even ones and odd ones.
	var even, odd []*unstructured.Unstructured
	for i, u := range deployments {
		if i%2 == 0 {
			even = append(even, u)
		} else {
			odd = append(odd, u)
		}
	}
	pools := []struct {
		actor Actor
		from  []*unstructured.Unstructured
	}{{ActorSetImage, even}, {ActorScale, odd}, {ActorEditConfigMap, configMaps}, {ActorEditRoute, routes}}
	rest := max(target-len(p), 0)
	for i, pool := range pools {
		n := rest / len(pools)
		if i < rest%len(pools) {
			n++
		}
		n = min(n, len(pool.from))
		for k := 0; k < n; k++ {
			p[ref(pool.from[k*len(pool.from)/n])] = pool.actor
		}
	}
	return p
}

// count returns how many objects each actor drifts.
func (p plan) count() map[Actor]int {
	out := map[Actor]int{}
	for _, a := range p {
		out[a]++
	}
	return out
}

func (p plan) summary() string {
	c := p.count()
	var parts []string
	for _, a := range actors {
		if c[a] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", a, c[a]))
		}
	}
	return strings.Join(parts, ", ")
}

// run makes the planned drift. The webhook's already happened at creation.
func (p plan) run(ctx context.Context, env *cluster.Env, workers int) error {
	var refs []string
	for r, a := range p {
		if a != ActorWebhook {
			refs = append(refs, r)
		}
	}
	sort.Strings(refs)
	return parallel(ctx, workers, len(refs), "drifted", func(ctx context.Context, i int) error {
		parts := strings.SplitN(refs[i], "/", 3)
		ns, name := parts[1], parts[2]
		switch p[refs[i]] {
		case ActorSetImage:
			_, err := env.PatchAs(ctx, "kubectl-set", cluster.Deployment, ns, name, types.StrategicMergePatchType,
				`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"registry.example.com/hotfix:1.25.1"}]}}}}`)
			return err
		case ActorScale:
			return env.ScaleAs(ctx, "kube-controller-manager", cluster.Deployment, ns, name, 5)
		case ActorEditConfigMap:
			_, err := env.UpdateAs(ctx, "kubectl-edit", cluster.ConfigMap, ns, name, func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, "debug", "data", "LOG_LEVEL")
			})
			return err
		case ActorEditRoute:
			_, err := env.UpdateAs(ctx, "kubectl-edit", routeGVK, ns, name, func(u *unstructured.Unstructured) {
				backends, _, _ := unstructured.NestedSlice(u.Object, "spec", "backends")
				for _, b := range backends {
					if m, ok := b.(map[string]any); ok && strings.HasSuffix(fmt.Sprint(m["name"]), "-v2") {
						m["weight"] = int64(50)
					}
				}
				_ = unstructured.SetNestedSlice(u.Object, backends, "spec", "backends")
			})
			return err
		}
		return fmt.Errorf("no actor for %s", refs[i])
	})
}
