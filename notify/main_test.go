package notify

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calricon/driftscan/fixtures/cluster"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// env is the real API server the ConfigMap state is tested on.
var env *cluster.Env

func TestMain(m *testing.M) { os.Exit(cluster.Main(m, &env)) }

// checkGolden compares got with testdata/<name>, or rewrites it with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./notify/ -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got), rerun with -update if the change is intended:\n%s", name, diff)
	}
}
