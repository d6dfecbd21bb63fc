package notify

import (
	"os"
	"testing"

	"github.com/calricon/driftscan/fixtures/cluster"
)

// env is the real API server the ConfigMap state is tested on.
var env *cluster.Env

func TestMain(m *testing.M) { os.Exit(cluster.Main(m, &env)) }
