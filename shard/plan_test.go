package shard

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// estate is apps spread over namespaces the way the benchmark lays them
// out: app i in namespace i mod nss.
func estate(apps, nss int) []App {
	out := make([]App, apps)
	for i := range out {
		out[i] = App{Name: fmt.Sprintf("app-%04d", i), Namespace: fmt.Sprintf("ns-%02d", i%nss)}
	}
	return out
}

func TestANamespaceIsScannedByOneShard(t *testing.T) {
	apps := estate(4000, 20)
	plan := Plan(apps, 4, ByNamespace)
	shardOf := map[string]int{}
	count := make([]int, 4)
	for i, a := range apps {
		if s, ok := shardOf[a.Namespace]; ok && s != plan[i] {
			t.Fatalf("namespace %s is in shards %d and %d", a.Namespace, s, plan[i])
		}
		shardOf[a.Namespace] = plan[i]
		count[plan[i]]++
	}
	// 20 namespaces of 200 apps: 5 whole namespaces each.
	for s, c := range count {
		if c != 1000 {
			t.Errorf("shard %d/4 has %d apps, want 1000 (counts %v)", s, c, count)
		}
	}
}

func TestShardsHoldTheirShareGiveOrTakeOneNamespace(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 50; round++ {
		var apps []App
		nss := 1 + r.IntN(60)
		biggest := map[string]int{}
		for i := 0; i < 200+r.IntN(2000); i++ {
			// Skewed: low-numbered namespaces hold more apps.
			ns := fmt.Sprintf("team-%d", int(float64(nss)*r.Float64()*r.Float64()))
			apps = append(apps, App{Name: fmt.Sprintf("app-%d", i), Namespace: ns})
			biggest[ns]++
		}
		most := 0
		for _, c := range biggest {
			most = max(most, c)
		}
		for n := 1; n <= 8; n++ {
			count := make([]int, n)
			for _, s := range Plan(apps, n, ByNamespace) {
				if s < 0 || s >= n {
					t.Fatalf("shard %d of %d", s, n)
				}
				count[s]++
			}
			share := float64(len(apps)) / float64(n)
			for s, c := range count {
				if float64(c) > share+float64(most) {
					t.Errorf("round %d, %d shards: shard %d has %d apps, over its share %.0f plus the biggest namespace's %d", round, n, s, c, share, most)
				}
			}
		}
	}
}

func TestAddingAnAppMovesOnlyNamespacesNextToACut(t *testing.T) {
	apps := estate(4000, 40)
	before := map[string]int{}
	for i, s := range Plan(apps, 4, ByNamespace) {
		before[apps[i].Namespace] = s
	}
	for i := 0; i < 300; i++ {
		apps = append(apps, App{Name: fmt.Sprintf("new-%d", i), Namespace: "ns-07"})
		moved := map[string]bool{}
		for j, s := range Plan(apps, 4, ByNamespace) {
			if ns := apps[j].Namespace; before[ns] != s {
				moved[ns] = true
			}
		}
		// Three cuts: at most one namespace crosses each.
		if len(moved) > 3 {
			t.Fatalf("after %d apps added to ns-07, %d namespaces moved: %v", i+1, len(moved), moved)
		}
	}
}

func TestThePlanDoesNotDependOnTheOrderOfTheApps(t *testing.T) {
	apps := estate(500, 13)
	apps = append(apps, App{Name: "cluster-addons"}, App{Name: "crds"})
	want := map[string]int{}
	for i, s := range Plan(apps, 3, ByNamespace) {
		want[apps[i].Name] = s
	}
	rand.New(rand.NewPCG(3, 4)).Shuffle(len(apps), func(i, j int) { apps[i], apps[j] = apps[j], apps[i] })
	for i, s := range Plan(apps, 3, ByNamespace) {
		if want[apps[i].Name] != s {
			t.Errorf("%s: shard %d after shuffling, %d before", apps[i].Name, s, want[apps[i].Name])
		}
	}
}

func TestByAppIsTheNameHash(t *testing.T) {
	apps := estate(300, 7)
	for i, s := range Plan(apps, 5, ByApp) {
		if s != Of(apps[i].Name, 5) {
			t.Errorf("%s: Plan ByApp %d, Of %d", apps[i].Name, s, Of(apps[i].Name, 5))
		}
	}
	for _, s := range Plan(apps, 1, ByNamespace) {
		if s != 0 {
			t.Fatalf("one shard: got shard %d", s)
		}
	}
}

func TestParseBy(t *testing.T) {
	for in, want := range map[string]By{"": ByNamespace, "namespace": ByNamespace, "app": ByApp} {
		if got, err := ParseBy(in); err != nil || got != want {
			t.Errorf("ParseBy(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseBy("cluster"); err == nil {
		t.Error("ParseBy(cluster): no error")
	}
}
