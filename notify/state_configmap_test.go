package notify

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func configMapStore(t *testing.T) *ConfigMapStore {
	t.Helper()
	ns := env.Namespace(t, nil)
	return &ConfigMapStore{Client: env.Client, Namespace: ns, Name: "driftscan-notify", Now: func() time.Time { return testNow }}
}

func TestConfigMapStoreSavesAndLoads(t *testing.T) {
	env.Need(t)
	ctx := t.Context()
	store := configMapStore(t)
	st, err := store.Load(ctx)
	if err != nil {
		t.Fatalf("Load without a ConfigMap: %v", err)
	}
	if err := store.Save(ctx, st); err != nil {
		t.Fatalf("Save without changes: %v", err)
	}
	if _, err := env.Client.CoreV1().ConfigMaps(store.Namespace).Get(ctx, store.Name, metav1.GetOptions{}); err == nil {
		t.Error("a Save without changes created the ConfigMap")
	}

	st.Record(key("a"), ChannelSlack, delivery("sha256:1", testNow))
	st.Record(key("a"), ChannelPagerDuty, Delivery{Fingerprint: "sha256:2", Owner: "team-web", Target: "env:PD_KEY_WEB", DedupKey: "driftscan/x", SentAt: testNow})
	if err := store.Save(ctx, st); err != nil {
		t.Fatal(err)
	}
	got, err := store.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(st, got, cmpState); diff != "" {
		t.Errorf("loaded state (-saved +loaded):\n%s", diff)
	}
	cm, err := env.Client.CoreV1().ConfigMaps(store.Namespace).Get(ctx, store.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if data, err := gunzip(cm.BinaryData[StateBinaryKey]); cm.Labels[labelManagedBy] != "driftscan" || len(cm.Data) != 0 || err != nil || !strings.Contains(string(data), `"kind":"NotifyState"`) {
		t.Errorf("ConfigMap labels %v, data %v, %s: %s (%v)", cm.Labels, cm.Data, StateBinaryKey, data, err)
	}

	// A second save updates the same object.
	got.Forget(key("a"), ChannelSlack, testNow.Add(time.Minute))
	if err := store.Save(ctx, got); err != nil {
		t.Fatal(err)
	}
	again, _ := store.Load(ctx)
	if len(again.Objects) != 1 || again.Objects[0].Slack != nil || again.Objects[0].PagerDuty == nil {
		t.Errorf("after forgetting slack: %+v", again.Objects)
	}
}

// A ConfigMap created empty beforehand (by a chart, so scans need no create
// right) is an empty state.
func TestConfigMapStoreReadsAPrecreatedEmptyConfigMap(t *testing.T) {
	env.Need(t)
	ctx := t.Context()
	store := configMapStore(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: store.Name, Namespace: store.Namespace}}
	if _, err := env.Client.CoreV1().ConfigMaps(store.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	st, err := store.Load(ctx)
	if err != nil || len(st.Objects) != 0 {
		t.Fatalf("Load = %+v, %v; want an empty state", st, err)
	}
	st.Record(key("a"), ChannelSlack, delivery("sha256:1", testNow))
	if err := store.Save(ctx, st); err != nil {
		t.Fatal(err)
	}
}

func TestConfigMapStoreResetsACorruptStateInPlace(t *testing.T) {
	env.Need(t)
	tests := []struct {
		name       string
		data       map[string]string
		binaryData map[string][]byte
		why        string
	}{
		{"unreadable JSON", map[string]string{StateDataKey: `{"apiVersion": "driftscan.dev/v1alpha1", "kind":`}, nil, "unexpected end of JSON input"},
		{"gzip that is not", nil, map[string][]byte{StateBinaryKey: []byte("not gzip")}, "state.json.gz: unexpected EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			store := configMapStore(t)
			cms := env.Client.CoreV1().ConfigMaps(store.Namespace)
			orig := &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: store.Name, Namespace: store.Namespace, Labels: map[string]string{"team": "web"}},
				Data:       tt.data, BinaryData: tt.binaryData,
			}
			if _, err := cms.Create(ctx, orig, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			st, err := store.Load(ctx)
			var corrupt *CorruptStateError
			if !errors.As(err, &corrupt) {
				t.Fatalf("Load = %v, want a *CorruptStateError", err)
			}
			if corrupt.KeptAs != "" || !strings.Contains(err.Error(), tt.why) || !strings.Contains(err.Error(), "configmap:"+store.Namespace+"/"+store.Name) || corrupt.Content == "" {
				t.Errorf("error %q (content %q), want it to name the state, say %q and carry the content", err, corrupt.Content, tt.why)
			}
			list, err := cms.List(ctx, metav1.ListOptions{})
			if err != nil || len(list.Items) != 1 {
				t.Errorf("%d ConfigMaps after the reset (%v), want only the state: nothing is kept aside", len(list.Items), err)
			}
			reset, err := cms.Get(ctx, store.Name, metav1.GetOptions{})
			if err != nil || reset.Labels["team"] != "web" || len(reset.Data) != 0 {
				t.Fatalf("the reset ConfigMap: %+v, %v", reset, err)
			}
			if again, err := store.Load(ctx); err != nil || len(again.Objects) != 0 {
				t.Errorf("Load after the reset: %+v, %v; want an empty state, no error", again, err)
			}
			st.Record(key("a"), ChannelSlack, delivery("sha256:1", testNow))
			if err := store.Save(ctx, st); err != nil {
				t.Fatal(err)
			}
			if got, err := store.Load(ctx); err != nil || len(got.Objects) != 1 {
				t.Errorf("after saving over it: %+v, %v", got, err)
			}
		})
	}
}

// Another tool's ConfigMap named by mistake as the state is left alone.
func TestConfigMapStoreLeavesAnotherToolsConfigMapAlone(t *testing.T) {
	env.Need(t)
	ctx := t.Context()
	store := configMapStore(t)
	cms := env.Client.CoreV1().ConfigMaps(store.Namespace)
	orig := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: store.Name, Namespace: store.Namespace}, Data: map[string]string{"app.properties": "debug=true"}}
	if _, err := cms.Create(ctx, orig, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Load(ctx); err == nil || !strings.Contains(err.Error(), "holds keys [app.properties] besides the state") {
		t.Errorf("Load: %v, want an error that the ConfigMap belongs to something else", err)
	}
	got, _ := cms.Get(ctx, store.Name, metav1.GetOptions{})
	if diff := cmp.Diff(orig.Data, got.Data); diff != "" {
		t.Errorf("the ConfigMap was changed (-before +after):\n%s", diff)
	}
}

// Scans that run at the same time each save what they sent; the
// ConfigMap ends holding all of it, readable.
func TestConfigMapStoreRacingScans(t *testing.T) {
	env.Need(t)
	ctx := t.Context()
	store := configMapStore(t)
	first, _ := store.Load(ctx)
	first.Record(key("shared"), ChannelSlack, delivery("sha256:0", testNow))
	if err := store.Save(ctx, first); err != nil {
		t.Fatal(err)
	}

	const scans, objects = 6, 5
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, scans)
	for s := range scans {
		wg.Go(func() {
			// Each scan has its own store value, as separate processes do.
			mine := &ConfigMapStore{Client: env.Client, Namespace: store.Namespace, Name: store.Name, Now: store.Now}
			st, err := mine.Load(ctx)
			if err != nil {
				errs <- err
				return
			}
			<-start
			for o := range objects {
				st.Record(key(fmt.Sprintf("scan-%d-object-%d", s, o)), ChannelPagerDuty, delivery(fmt.Sprintf("sha256:%d-%d", s, o), testNow.Add(time.Minute)))
			}
			st.Record(key("shared"), ChannelSlack, delivery(fmt.Sprintf("sha256:shared-%d", s), testNow.Add(time.Duration(s+1)*time.Second)))
			errs <- mine.Save(ctx, st)
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a racing save failed: %v", err)
		}
	}
	got, err := store.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Objects) != scans*objects+1 {
		t.Errorf("%d objects after %d racing scans, want %d: a save was lost", len(got.Objects), scans, scans*objects+1)
	}
	for s := range scans {
		for o := range objects {
			if d := got.Get(key(fmt.Sprintf("scan-%d-object-%d", s, o)), ChannelPagerDuty); d == nil {
				t.Errorf("scan %d object %d is missing", s, o)
			}
		}
	}
	// The newest delivery of the object all of them sent wins.
	if d := got.Get(key("shared"), ChannelSlack); d == nil || d.Fingerprint != fmt.Sprintf("sha256:shared-%d", scans-1) {
		t.Errorf("shared object: %+v, want the newest scan's delivery", d)
	}
}

// Notify on the ConfigMap state: a second scan sends nothing.
func TestNotifyWithConfigMapState(t *testing.T) {
	store := configMapStore(t)
	f := newFakeAPI(t)
	if _, err := Notify(t.Context(), testReport(), store, f.options()); err != nil {
		t.Fatal(err)
	}
	if n := len(f.take()); n != 6 {
		t.Errorf("first scan sent %d requests, want 6", n)
	}
	res, err := Notify(t.Context(), testReport(), store, f.options())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.take()); n != 0 || res.Skipped != 9 {
		t.Errorf("second scan sent %d requests and skipped %d, want 0 and 9", n, res.Skipped)
	}
}
