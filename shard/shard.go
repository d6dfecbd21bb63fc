// Package shard splits a scan's apps between the pods of an Indexed Job.
//
// An app belongs to exactly one of N shards (Plan). By namespace, the
// default, whole namespaces are dealt out in the order of their FNV-1a hash,
// so a shard lists only its own namespaces; by app, an app's shard is the
// FNV-1a 32-bit hash of its name, modulo N (Of), the same on every run, in
// every pod and in every version of driftscan, and adding or removing an app
// never moves another one. Changing N reshuffles either way.
package shard

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// Of returns the shard, in [0, n), that app belongs to. An n below 1 counts
// as one shard.
func Of(app string, n int) int {
	if n <= 1 {
		return 0
	}
	return int(hash(app) % uint32(n))
}

// hash is FNV-1a, 32 bits.
func hash(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s)) // a hash.Hash never returns an error
	return h.Sum32()
}

// Spec is one shard of a sharded scan, written "i/N" on the command line
// (`--shard $(JOB_COMPLETION_INDEX)/N`).
type Spec struct {
	// Index is this shard, from 0 to Count-1.
	Index int
	// Count is the number of shards, at least 1.
	Count int
}

// ParseSpec parses "i/N" where N is at least 1 and 0 <= i < N, both plain
// decimal numbers.
func ParseSpec(s string) (Spec, error) {
	is, ns, ok := strings.Cut(s, "/")
	if !ok {
		return Spec{}, fmt.Errorf("shard %q: want INDEX/COUNT, for example 0/4", s)
	}
	i, err := number(is)
	if err != nil {
		return Spec{}, fmt.Errorf("shard %q: index: %w", s, err)
	}
	n, err := number(ns)
	if err != nil {
		return Spec{}, fmt.Errorf("shard %q: count: %w", s, err)
	}
	if n < 1 {
		return Spec{}, fmt.Errorf("shard %q: count must be at least 1", s)
	}
	if i >= n {
		return Spec{}, fmt.Errorf("shard %q: index must be below the count (0 to %d)", s, n-1)
	}
	return Spec{Index: i, Count: n}, nil
}

// number parses a non-empty run of ASCII digits; strconv.Atoi alone would
// also take "+1" and "-0".
func number(s string) (int, error) {
	if s == "" {
		return 0, fmt.Errorf("empty")
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, fmt.Errorf("%q is not a number", s)
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", s, err)
	}
	return n, nil
}

// String returns the spec as ParseSpec reads it.
func (s Spec) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }
