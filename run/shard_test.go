package run

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/notify"
	"github.com/calricon/driftscan/report"
	"github.com/calricon/driftscan/shard"
)

// configMapApp writes an app of one ConfigMap named name, applies it in ns
// as Argo CD would, and has a human edit it when drifted.
func configMapApp(t *testing.T, app, ns, name string, drifted bool) config.App {
	t.Helper()
	dir := t.TempDir()
	doc := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {level: info}\n", name)
	if err := os.WriteFile(filepath.Join(dir, "cm.yaml"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	env.Apply(t, "argocd-controller", ns, cluster.Object(t, doc))
	if drifted {
		env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, name, types.MergePatchType, `{"data":{"level":"debug"}}`)
	}
	return config.App{Name: app, Owner: "team-web", Namespace: ns, Source: config.Source{Path: dir}}
}

// plan is the shard of each app of apps, by name, as two shards by
// namespace split them.
func plan(apps []config.App) map[string]int {
	units := make([]shard.App, len(apps))
	for i, a := range apps {
		units[i] = shard.App{Name: a.Name, Namespace: a.Namespace}
	}
	out := map[string]int{}
	for i, s := range shard.Plan(units, 2, shard.ByNamespace) {
		out[apps[i].Name] = s
	}
	return out
}

// TestAnAppThatMovesToAnotherShardIsNotPagedAgain: with shards by
// namespace, new apps move the cut between shards, and a namespace with
// open drift moves to the other shard. That shard's state had never paged
// it, so it paged the same drift again. It now takes over what the other
// shard told, and the other shard lets go of it.
func TestAnAppThatMovesToAnotherShardIsNotPagedAgain(t *testing.T) {
	env.Need(t)
	pd := newSlowPagerDuty(t, 0)
	stateNS := env.Namespace(t, nil)
	for i := range 2 {
		if _, err := env.Client.CoreV1().ConfigMaps(stateNS).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("driftscan-state-%d", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var apps []config.App
	nss := make([]string, 4)
	for i := range nss {
		nss[i] = env.Namespace(t, nil)
		apps = append(apps, configMapApp(t, fmt.Sprintf("web-%d", i), nss[i], "web", true))
	}
	// How many in-sync apps added to which namespace move exactly one
	// drifted app, and which.
	before := plan(apps)
	var (
		grown []config.App
		moved string
	)
search:
	for _, ns := range nss {
		for k := 1; k <= 12; k++ {
			more := slices.Clone(apps)
			for j := range k {
				more = append(more, config.App{Name: fmt.Sprintf("extra-%d", j), Namespace: ns})
			}
			after := plan(more)
			var m []string
			for _, a := range apps {
				if after[a.Name] != before[a.Name] {
					m = append(m, a.Name)
				}
			}
			if len(m) == 1 {
				grown, moved = more, m[0]
				for j := range k {
					grown[len(apps)+j] = configMapApp(t, fmt.Sprintf("extra-%d", j), ns, fmt.Sprintf("extra-%d", j), false)
				}
				break search
			}
		}
	}
	if moved == "" {
		t.Fatal("no number of added apps moves exactly one drifted app: the plan does not move namespaces as Plan says")
	}

	t.Setenv("PD_KEY", "pd-routing-key")
	run := func(apps []config.App, index int) {
		t.Helper()
		cfg := config.New()
		cfg.Appliers = []string{"argocd-controller"}
		cfg.Apps = slices.Clone(apps)
		cfg.Owners = config.Owners{"team-web": {PagerDuty: &config.PagerDutyRoute{RoutingKeyEnv: "PD_KEY"}}}
		cfg.Notify = &config.Notify{PagerDuty: config.PagerDuty{EventsURL: pd.srv.URL}, Route: config.Route{PagerDuty: []report.Class{report.ClassHuman}}}
		opts := DefaultOptions()
		opts.Scan.RESTConfig, opts.Scan.GitCacheDir = env.Config, t.TempDir()
		opts.Shard, opts.ShardBy = fmt.Sprintf("%d/2", index), shard.ByNamespace
		opts.Notify.State = fmt.Sprintf("configmap:%s/driftscan-state-%d", stateNS, index)
		opts.Notify.LeaseDuration = 5 * time.Second
		res, err := Scan(t.Context(), cfg, opts)
		if err != nil || len(res.NotifyErrors) > 0 {
			t.Fatalf("shard %d/2: %v %v", index, err, res.NotifyErrors)
		}
	}
	stateApps := func(index int) []string {
		t.Helper()
		st, err := (&notify.ConfigMapStore{Client: env.Client, Namespace: stateNS, Name: fmt.Sprintf("driftscan-state-%d", index)}).Peek(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range st.Objects {
			out = append(out, e.App)
		}
		return out
	}

	run(apps, 0)
	run(apps, 1)
	if pd.count() != 4 {
		t.Fatalf("first run: %d pages, want 4 (one per drifted app)", pd.count())
	}
	from, to := before[moved], 1-before[moved]
	if !slices.Contains(stateApps(from), moved) {
		t.Fatalf("shard %d's state %v does not hold %s, which it paged", from, stateApps(from), moved)
	}

	// The pods of a Job run at once: the shard the app moved to loads its
	// state before the other has saved.
	run(grown, to)
	run(grown, from)
	if pd.count() != 4 || len(pd.resolves) != 0 {
		t.Errorf("after %s moved from shard %d to %d: %d pages and resolves %v, want the 4 of the first run and none", moved, from, to, pd.count(), pd.resolves)
	}
	if !slices.Contains(stateApps(to), moved) || slices.Contains(stateApps(from), moved) {
		t.Errorf("states: shard %d %v, shard %d %v; want %s in shard %d's only", from, stateApps(from), to, stateApps(to), moved, to)
	}
}
