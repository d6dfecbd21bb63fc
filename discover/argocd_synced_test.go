package discover

import (
	"encoding/json"
	"testing"
)

// The commit live is compared with: the last sync's (status.history), or
// the one Argo CD compared last when it finds the app Synced there and no
// sync of it will run; not the one it compared when it finds the app
// OutOfSync (that commit is pending), nor a chart version or a
// multi-source app's.
func TestSyncedIsTheLastSyncUnlessArgoCDFindsANewerCommitSynced(t *testing.T) {
	const old, head = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	for _, tt := range []struct{ name, status, want string }{
		{"never synced", `{}`, ""},
		{"the last sync", `{"history":[{"revision":"` + old + `"}],"sync":{"status":"Synced","revision":"` + old + `"}}`, old},
		{"OutOfSync at a newer commit: it is pending", `{"history":[{"revision":"` + old + `"}],"sync":{"status":"OutOfSync","revision":"` + head + `"}}`, old},
		{"Synced at a newer commit no sync applied", `{"history":[{"revision":"` + old + `"}],"sync":{"status":"Synced","revision":"` + head + `"}}`, head},
		{"Synced before any sync", `{"sync":{"status":"Synced","revision":"` + head + `"}}`, head},
		{"Unknown at a newer commit", `{"history":[{"revision":"` + old + `"}],"sync":{"status":"Unknown","revision":"` + head + `"}}`, old},
		{"Synced at a chart version", `{"history":[{"revision":"` + old + `"}],"sync":{"status":"Synced","revision":"1.2.0"}}`, old},
		{"Synced, multi-source", `{"history":[{"revision":"` + old + `"}],"sync":{"status":"Synced","revision":"` + head + `","revisions":["` + head + `","` + head + `"]}}`, old},
	} {
		var a application
		if err := json.Unmarshal([]byte(`{"status":`+tt.status+`}`), &a); err != nil {
			t.Fatal(err)
		}
		if got := a.synced(); got != tt.want {
			t.Errorf("%s: synced %q, want %q", tt.name, got, tt.want)
		}
	}
}
