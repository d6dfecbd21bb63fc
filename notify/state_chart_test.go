package notify

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/calricon/driftscan/charts"
	"github.com/calricon/driftscan/doctor/doctortest"
)

// chartStore installs the chart's RBAC and state and returns the state as
// the chart's ServiceAccount sees it: get and update on it, nothing more.
func chartStore(t *testing.T) (*ConfigMapStore, *doctortest.Install) {
	t.Helper()
	in := doctortest.InstallChart(t, env, ``)
	return &ConfigMapStore{Client: in.Client, Namespace: in.Namespace, Name: in.State, Now: func() time.Time { return testNow }}, in
}

// bigState is a state of n drifted objects told on Slack and PagerDuty,
// each with its own fingerprints, as 200 apps over 20 namespaces have.
func bigState(n int) *State {
	st := NewState()
	fp := func(s string) string {
		sum := sha256.Sum256([]byte(s))
		return "sha256:" + hex.EncodeToString(sum[:16])
	}
	for i := range n {
		k := Key{Cluster: "prod-eu-1", App: fmt.Sprintf("app-%03d", i%200), Group: "apps", Kind: "Deployment", Namespace: fmt.Sprintf("team-%02d", i%20), Name: fmt.Sprintf("web-%05d", i)}
		at := testNow.Add(-time.Duration(i%7) * time.Hour)
		st.Record(k, ChannelSlack, Delivery{Fingerprint: fp(fmt.Sprint("s", i)), Owner: fmt.Sprintf("team-%02d", i%20), Target: "#web-oncall", SentAt: at})
		st.Record(k, ChannelPagerDuty, Delivery{Fingerprint: fp(fmt.Sprint("p", i)), Owner: fmt.Sprintf("team-%02d", i%20), Target: "env:PD_KEY_WEB", DedupKey: dedupKey(k), SentAt: at})
	}
	return st
}

// TestACorruptStateIsResetUnderTheChartsRBAC is the regression test of a
// state ConfigMap someone broke (a bad edit): the scan kept it aside by
// creating a copy, which the chart's RBAC (get and update, by name) does
// not allow, so Load failed and nothing was ever notified again. The
// state is now reset in place with an update, its content logged once with
// secrets masked, and the run notifies.
func TestACorruptStateIsResetUnderTheChartsRBAC(t *testing.T) {
	env.Need(t)
	store, in := chartStore(t)
	ctx := t.Context()
	cms := env.Client.CoreV1().ConfigMaps(in.Namespace)
	cm, err := cms.Get(ctx, in.State, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data = map[string]string{StateDataKey: `{"apiVersion": "driftscan.dev/v1alpha1", "routingKey": "` + testSecrets["PD_KEY_WEB"] + `",`}
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	f := newFakeAPI(t)
	res, err := Notify(ctx, testReport(), store, f.options())
	if err != nil {
		t.Fatalf("Notify: %v", err)
	}
	var resets int
	for _, e := range res.Errors {
		if strings.Contains(e.Error(), "was reset to an empty state") {
			resets++
		}
	}
	if resets != 1 {
		t.Errorf("errors %v, want the reset once", res.Errors)
	}
	if sent := len(f.take()); sent != 6 || res.Sent != 6 {
		t.Errorf("%d requests, %d sent; want all 6 sent after the reset", sent, res.Sent)
	}
	logs := f.logs.String()
	if n := strings.Count(logs, "the state was not readable and was reset"); n != 1 {
		t.Errorf("the reset is logged %d times, want once:\n%s", n, logs)
	}
	if !strings.Contains(logs, `routingKey`) || strings.Contains(logs, testSecrets["PD_KEY_WEB"]) {
		t.Errorf("the log does not show the content with the routing key masked:\n%s", logs)
	}
	if again, err := store.Load(ctx); err != nil || len(again.Objects) == 0 {
		t.Errorf("the state after the run: %+v, %v; want what was sent", again, err)
	}
}

// TestADeletedStateSendsNothingUntilTheChartRecreatesIt: without its state
// ConfigMap, a scan under the chart's RBAC (which cannot create it) sent
// every notification and then failed to save, so every run sent them all
// again. The save is now checked first: nothing is sent, the error says
// `helm upgrade` recreates it, and once it has, the run notifies.
func TestADeletedStateSendsNothingUntilTheChartRecreatesIt(t *testing.T) {
	env.Need(t)
	store, in := chartStore(t)
	ctx := t.Context()
	if err := env.Client.CoreV1().ConfigMaps(in.Namespace).Delete(ctx, in.State, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f := newFakeAPI(t)
	for run := 1; run <= 2; run++ {
		_, err := Notify(ctx, testReport(), store, f.options())
		if err == nil || !strings.Contains(err.Error(), "nothing was sent") || !strings.Contains(err.Error(), "helm upgrade") {
			t.Errorf("run %d: %v, want an error that nothing was sent and helm upgrade recreates the state", run, err)
		}
		if reqs := f.take(); len(reqs) != 0 {
			t.Errorf("run %d sent %d requests without a state to remember them in", run, len(reqs))
		}
	}

	// helm upgrade: Helm creates what the release has and the cluster lacks.
	opts := charts.DefaultOptions()
	opts.ReleaseName, opts.Namespace = in.Namespace, in.Namespace
	rel, err := charts.Render(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	env.Create(t, "helm", "", rel.Find("ConfigMap", in.State))
	res, err := Notify(ctx, testReport(), store, f.options())
	if err != nil || res.Sent != 6 {
		t.Fatalf("after the upgrade: sent %d, %v; want 6 and no error", res.Sent, err)
	}
	f.take()
	if res, err := Notify(ctx, testReport(), store, f.options()); err != nil || len(f.take()) != 0 || res.Skipped == 0 {
		t.Errorf("the next run: %v, want nothing sent again", err)
	}
}

// TestTenThousandDriftedObjectsFitTheState: the state was indented JSON in
// one data key, about 640 bytes an object on two channels, so about 1,600
// objects filled the ConfigMap's 1 MiB and every save after failed. The
// gzipped state holds 10,000 within half of that, without a warning; a
// state over half of it warns, and one over the limit is refused before
// anything is sent.
func TestTenThousandDriftedObjectsFitTheState(t *testing.T) {
	store, _ := chartStore(t)
	ctx := t.Context()
	st := bigState(10000)
	old, _ := st.encode()
	if err := store.Save(ctx, st); err != nil {
		t.Fatalf("save 10,000 objects under the chart's RBAC: %v", err)
	}
	u, err := store.Check(ctx, st)
	if err != nil || u.Bytes > stateWarnBytes {
		t.Fatalf("10,000 objects take %d KiB (%v), want under %d KiB", u.Bytes>>10, err, stateWarnBytes>>10)
	}
	t.Logf("10,000 objects on two channels: %d KiB gzipped, %d KiB as the indented JSON it was", u.Bytes>>10, len(old)>>10)
	got, err := store.Load(ctx)
	if err != nil || len(got.Objects) != 10000 {
		t.Fatalf("loaded %d objects, %v", len(got.Objects), err)
	}

	// Past half of the ConfigMap: the run sends, and warns.
	if err := store.Save(ctx, bigState(14000)); err != nil {
		t.Fatal(err)
	}
	f := newFakeAPI(t)
	res, err := Notify(ctx, testReport(), store, f.options())
	if err != nil || res.Sent == 0 || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "KiB of the 1024 KiB") {
		t.Errorf("at 14,000 objects: sent %d, warnings %q, %v; want sent and one warning", res.Sent, res.Warnings, err)
	}

	// Over the limit: nothing is sent.
	if _, err := store.Check(ctx, bigState(30000)); err == nil || !strings.Contains(err.Error(), "over the 1024 KiB a ConfigMap holds") {
		t.Errorf("Check of 30,000 objects: %v, want over the limit", err)
	}
}
