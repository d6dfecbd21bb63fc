package discover

import (
	"strings"
	"testing"
	"time"
)

func appTo(server, name, namespace string) *application {
	var a application
	a.Spec.Destination.Server, a.Spec.Destination.Name, a.Spec.Destination.Namespace = server, name, namespace
	return &a
}

// Which windows apply to an Application, as Argo CD's SyncWindows.Matches
// decides: by application name, else cluster (name or server), else
// namespace; with andOperator every list that is set must match.
func TestSyncWindowsMatchAsArgoCDMatchesThem(t *testing.T) {
	web := appTo("https://kubernetes.default.svc", "", "shop")
	named := appTo("", "in-cluster", "shop")
	for _, tt := range []struct {
		name string
		w    syncWindow
		app  *application
		want bool
	}{
		{"by application glob", syncWindow{Applications: []string{"web-*"}}, web, true},
		{"another application", syncWindow{Applications: []string{"db"}}, web, false},
		{"by server", syncWindow{Clusters: []string{"https://kubernetes.default.svc"}}, web, true},
		{"by cluster name", syncWindow{Clusters: []string{"in-*"}}, named, true},
		{"a name does not match a server", syncWindow{Clusters: []string{"in-cluster"}}, web, false},
		{"by namespace", syncWindow{Namespaces: []string{"sh*"}}, web, true},
		{"any of the lists", syncWindow{Applications: []string{"db"}, Namespaces: []string{"shop"}}, web, true},
		{"nothing set matches nothing", syncWindow{}, web, false},
		{"and: every list set", syncWindow{UseAndOperator: true, Applications: []string{"web-*"}, Namespaces: []string{"shop"}}, web, true},
		{"and: one list fails", syncWindow{UseAndOperator: true, Applications: []string{"web-*"}, Namespaces: []string{"prod"}}, web, false},
		{"and: the application fails", syncWindow{UseAndOperator: true, Applications: []string{"db"}, Namespaces: []string{"shop"}}, web, false},
	} {
		w := tt.w
		got := len(matchingWindows([]*syncWindow{&w}, "web-frontend", tt.app)) == 1
		if got != tt.want {
			t.Errorf("%s: matched %v, want %v", tt.name, got, tt.want)
		}
	}
}

// Whether Argo CD's automated sync may run at the scan's time, and if not
// until when: SyncWindows.CanSync(false, nil) at each time a window opens
// or closes.
func TestSyncBlockedSaysUntilWhen(t *testing.T) {
	// Monday 2026-12-07, 23:00 UTC (midnight in Berlin, UTC+1 in winter).
	now := time.Date(2026, 12, 7, 23, 0, 0, 0, time.UTC)
	deny := func(schedule, duration string) *syncWindow {
		return &syncWindow{Kind: "deny", Schedule: schedule, Duration: duration}
	}
	allow := func(schedule, duration string) *syncWindow {
		return &syncWindow{Kind: "allow", Schedule: schedule, Duration: duration}
	}
	berlin := deny("0 22 * * *", "8h")
	berlin.TimeZone = "Europe/Berlin"
	freeze := deny("0 0 1 12 *", "744h")
	freeze.Description = "CHG-1234 December freeze"
	for _, tt := range []struct {
		name string
		ws   []*syncWindow
		want []string // in the reason; none: not blocked
	}{
		{"no windows", nil, nil},
		{"a deny window not open", []*syncWindow{deny("0 9 * * *", "1h")}, nil},
		{"a nightly deny window", []*syncWindow{deny("0 22 * * *", "8h")}, []string{`the deny sync window "0 22 * * *" for 8h`, "until 2026-12-08 06:00 UTC"}},
		{"in the window's time zone", []*syncWindow{berlin}, []string{"in Europe/Berlin", "until 2026-12-08 05:00 UTC"}},
		{"an allow window open", []*syncWindow{allow("0 22 * * *", "2h")}, nil},
		{"office hours only, on a Monday night", []*syncWindow{allow("0 9 * * 1-5", "8h")}, []string{"the closed allow sync window", "until 2026-12-08 09:00 UTC"}},
		{"a deny window wins over an open allow window", []*syncWindow{allow("0 22 * * *", "2h"), deny("30 22 * * *", "1h")}, []string{"until 2026-12-07 23:30 UTC"}},
		{"two deny windows, back to back", []*syncWindow{deny("0 22 * * *", "2h"), deny("0 0 * * *", "3h")}, []string{"the deny sync windows", "until 2026-12-08 03:00 UTC"}},
		{"overlapping starts keep it open", []*syncWindow{deny("* * * * *", "1h")}, []string{"for at least 31 days"}},
		{"a month's freeze", []*syncWindow{freeze}, []string{"(CHG-1234 December freeze)", "until 2027-01-01 00:00 UTC"}},
		{"a schedule Argo CD cannot parse", []*syncWindow{deny("every night", "8h")}, []string{"cannot be read", "cannot parse schedule 'every night'"}},
		{"a duration Argo CD cannot parse", []*syncWindow{deny("0 22 * * *", "8 hours")}, []string{"cannot parse duration '8 hours'"}},
	} {
		got := ""
		if len(tt.ws) > 0 {
			got = syncBlocked(tt.ws, "argocd/shop", now)
		}
		if len(tt.want) == 0 {
			if got != "" {
				t.Errorf("%s: blocked: %q, want automated syncs to run", tt.name, got)
			}
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(got, w) || !strings.Contains(got, "AppProject argocd/shop") {
				t.Errorf("%s: %q, want it to name the project and say %q", tt.name, got, w)
			}
		}
	}
}

// The answer is worked out once per project and set of windows: an
// always-open window steps through the horizon a minute at a time.
func BenchmarkSyncBlockedAlwaysOpen(b *testing.B) {
	now := time.Date(2026, 12, 7, 23, 0, 0, 0, time.UTC)
	ws := []*syncWindow{{Kind: "deny", Schedule: "* * * * *", Duration: "1h"}}
	for b.Loop() {
		syncBlocked(ws, "argocd/shop", now)
	}
}

// Discovery reads each project's sync windows and says, on each app with
// automated sync, whether they block it at the scan's time; an app whose
// automated sync is off says nothing of them.
func TestAppsSayWhatSyncWindowsBlock(t *testing.T) {
	installCRDs(t)
	ns := env.Namespace(t, nil)
	applyAll(t, "argocd-server", ns, `
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: team}
spec:
  sourceRepos: ['*']
  destinations: [{server: '*', namespace: '*'}]
  syncWindows:
  - {kind: deny, schedule: '0 22 * * *', duration: 8h, applications: [web], description: nightly}
  - {kind: deny, schedule: '0 9 * * *', duration: 1h, namespaces: ['*']}
`)
	for _, app := range []struct{ name, policy string }{
		{"web", "automated: {selfHeal: true}"},
		{"db", "automated: {selfHeal: true}"},
		{"manual", "syncOptions: []"},
	} {
		applyAll(t, "argocd-server", ns, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: `+app.name+`}
spec:
  project: team
  destination: {server: https://kubernetes.default.svc, namespace: shop}
  source: {repoURL: https://git.example.com/shop/deploy.git, path: apps/`+app.name+`}
  syncPolicy: {`+app.policy+`}
`)
	}
	opts := options(FromArgoCD, ns)
	opts.Now = func() time.Time { return time.Date(2026, 12, 7, 23, 0, 0, 0, time.UTC) }
	res := discover(t, opts)
	got := map[string]string{}
	for _, a := range res.Apps {
		got[a.Name] = a.GitOps.SyncBlocked
	}
	want := map[string]string{
		"web":    `the deny sync window "0 22 * * *" for 8h (nightly) of AppProject ` + ns + `/team blocks automated syncs until 2026-12-08 06:00 UTC`,
		"db":     "",
		"manual": "",
	}
	if d := diff(want, got); d != "" {
		t.Errorf("sync blocked (-want +got):\n%s", d)
	}
}
