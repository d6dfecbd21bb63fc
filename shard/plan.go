package shard

import (
	"cmp"
	"fmt"
	"slices"
)

// By is what a shard is cut from: whole namespaces (ByNamespace) or single
// apps (ByApp).
type By string

const (
	// ByNamespace keeps every app of one namespace in one shard, so a shard
	// lists only its own namespaces and the API server serializes each
	// object for one shard, not for every shard. It is the default.
	ByNamespace By = "namespace"
	// ByApp hashes each app's name alone (Of): an app never moves while N
	// stays, but every shard reads every namespace its apps touch, which
	// with apps spread over many namespaces is all of them.
	ByApp By = "app"
)

// ParseBy parses "namespace" or "app"; "" is ByNamespace.
func ParseBy(s string) (By, error) {
	switch By(s) {
	case "", ByNamespace:
		return ByNamespace, nil
	case ByApp:
		return ByApp, nil
	}
	return "", fmt.Errorf("shard-by %q: want %s or %s", s, ByNamespace, ByApp)
}

// App is what the plan needs of an app: its name, and the namespace it
// deploys to ("" when its objects name their own or are cluster-scoped).
type App struct {
	Name, Namespace string
}

// Plan returns the shard, in [0, n), of each app, in the order given.
//
// ByApp is Of(name, n). ByNamespace groups the apps by namespace (an app
// without one is a group of its own), lays the groups out in the order of
// their FNV-1a hash, and cuts that line into n runs of about the same
// number of apps: a group goes to the shard its middle falls in. A shard
// holds its share of the apps give or take one group. The order of the line
// does not depend on the apps, so adding or removing an app moves only the
// groups whose middle lies next to a cut, never one from the middle of a
// shard. Every pod computes the same plan from the same apps, in any order.
func Plan(apps []App, n int, by By) []int {
	out := make([]int, len(apps))
	if n <= 1 {
		return out
	}
	if by == ByApp {
		for i, a := range apps {
			out[i] = Of(a.Name, n)
		}
		return out
	}
	type group struct {
		key  string
		hash uint32
		apps []int
	}
	index := map[string]int{}
	var groups []group
	for i, a := range apps {
		key := "namespace/" + a.Namespace
		if a.Namespace == "" {
			key = "app/" + a.Name
		}
		gi, ok := index[key]
		if !ok {
			gi = len(groups)
			index[key] = gi
			groups = append(groups, group{key: key, hash: hash(key)})
		}
		groups[gi].apps = append(groups[gi].apps, i)
	}
	slices.SortFunc(groups, func(a, b group) int {
		return cmp.Or(cmp.Compare(a.hash, b.hash), cmp.Compare(a.key, b.key))
	})
	total, before := len(apps), 0
	for _, g := range groups {
		// The shard the group's middle falls in, in units of half an app.
		mid := 2*before + len(g.apps)
		s := min(mid*n/(2*total), n-1)
		for _, i := range g.apps {
			out[i] = s
		}
		before += len(g.apps)
	}
	return out
}
