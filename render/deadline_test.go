package render

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/bounded"
)

// loopingChart is a chart whose one template loops 10^15 times in a few
// kilobytes of memory: Helm's template engine has no deadline of its own.
var loopingChart = map[string]string{
	"Chart.yaml":          "apiVersion: v2\nname: loop\nversion: 0.1.0\n",
	"templates/loop.yaml": "{{ range until 100000 }}{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}{{ end }}\n",
}

// TestARenderThatLoopsForeverReturnsAtItsTimeout is issue 17's chart that
// loops forever: before renders were bounded, Manifests never returned and
// the scan hung past --timeout and SIGTERM (here: the child ran past its 60
// seconds and was killed). Now it returns at Options.Timeout, and when its
// context ends, with an error that says so.
func TestARenderThatLoopsForeverReturnsAtItsTimeout(t *testing.T) {
	if !bounded.InChild(t, bounded.Limits{Memory: 2 << 30, Time: 60 * time.Second}) {
		return
	}
	dir := t.TempDir()
	writeTree(t, dir, loopingChart)

	start := time.Now()
	_, err := Manifests(t.Context(), Options{Dir: dir, Helm: &config.HelmSource{}, Timeout: time.Second})
	if !errors.Is(err, ErrRenderTimeout) || !strings.Contains(err.Error(), "did not finish within 1s") {
		t.Errorf("err = %v, want the render abandoned after 1s", err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("returned after %s", took)
	}

	// SIGTERM and --timeout end the scan's context: the render returns too.
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(time.Second, cancel)
	_, err = Manifests(ctx, Options{Dir: dir, Helm: &config.HelmSource{}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want the render given up when its context was canceled", err)
	}
}
