package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// kubectlArgs is the reference command, without -R -f, the kubeconfig and
// the logging flags: server-side, so the API server merges as it would on
// apply; --force-conflicts, else it fails on the first field another manager
// owns (FACTS.md); --concurrency=8 (kubectl 1.28 or newer).
var kubectlArgs = []string{"diff", "--server-side", "--force-conflicts", "--concurrency=8", "--field-manager=argocd-controller"}

// timeKubectl runs kubectl diff over the estate's repository runs times and
// returns the median run and the objects it showed as changed, by
// Kind/namespace/name.
//
// kubectl logs every request at -v=6 (one "Response" line with the verb,
// URL and status, or "GET https://... 200 OK" before 1.31); the run counts
// those lines. Each run gets a fresh --cache-dir, so discovery and OpenAPI
// are fetched as on a first run, as they are for driftscan.
func timeKubectl(ctx context.Context, l *launcher, bin string, b *bed, outDir string, runs int) (Tool, map[string]bool, error) {
	t := Tool{Version: toolVersion(ctx, bin, "version", "--client")}
	var walls []time.Duration
	var procs []process
	var changes []map[string]bool
	var counts []map[string]int64
	var costs []ServerCost
	for i := 0; i < runs; i++ {
		outFile := filepath.Join(outDir, fmt.Sprintf("kubectl-%d.diff", i))
		logFile := filepath.Join(outDir, fmt.Sprintf("kubectl-%d.log", i))
		args := append(append([]string{}, kubectlArgs...), "-R", "-f", b.est.Repo, "--kubeconfig", b.env.Kubeconfig)
		t.Command = append([]string{"kubectl"}, args...)
		args = append(args, "--cache-dir", filepath.Join(outDir, fmt.Sprintf("kubectl-cache-%d", i)), "-v=6")
		stdout, err := os.Create(outFile)
		if err != nil {
			return t, nil, err
		}
		stderr, err := os.Create(logFile)
		if err != nil {
			_ = stdout.Close()
			return t, nil, err
		}
		var p process
		cost, err := b.cp.measure(func() error {
			var err error
			p, err = l.measure(ctx, bin, args, stdout, stderr, kubectlEnv())
			return err
		})
		_, _ = stdout.Close(), stderr.Close()
		if err != nil {
			return t, nil, err
		}
		// 0: no differences, 1: differences, anything else: kubectl failed.
		if p.ExitCode > 1 {
			return t, nil, fmt.Errorf("kubectl diff exited %d:\n%s", p.ExitCode, tail(logFile, 20))
		}
		changed, err := diffedObjects(outFile)
		if err != nil {
			return t, nil, err
		}
		byVerb, err := countRequests(logFile)
		if err != nil {
			return t, nil, err
		}
		say("kubectl diff run %d: %.2fs, %d requests, %.0f MiB, %d objects differ, control plane %.2f CPU s", i+1, p.Wall.Seconds(), sum(byVerb), mib(p.MaxRSS), len(changed), cost.CPUSeconds())
		walls, procs, changes, counts, costs = append(walls, p.Wall), append(procs, p), append(changes, changed), append(counts, byVerb), append(costs, cost)
	}
	m := median(walls)
	p := procs[m]
	if b.cp != nil {
		t.Server = &costs[m]
	}
	t.Objects = len(b.est.Objects)
	t.DriftedObjects = len(changes[m])
	t.WallSeconds, t.MaxRSSMiB, t.RSSFloorMiB, t.ExitCode = p.Wall.Seconds(), mib(p.MaxRSS), mib(p.Floor), p.ExitCode
	t.MaxAnonMiB = mib(p.MaxAnon)
	t.CPUSeconds = p.CPU.Seconds()
	t.RequestsByVerb, t.APIRequests = counts[m], sum(counts[m])
	if runs > 1 {
		for _, w := range walls {
			t.RunsWallSeconds = append(t.RunsWallSeconds, w.Seconds())
		}
	}
	return t, changes[m], nil
}

// kubectlEnv is the environment without a KUBECTL_EXTERNAL_DIFF, so kubectl
// uses its default `diff -u -N` and prints unified diff headers.
func kubectlEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECTL_EXTERNAL_DIFF=") && !strings.HasPrefix(kv, "KUBECONFIG=") {
			out = append(out, kv)
		}
	}
	return out
}

// diffedObjects reads kubectl diff's output: one unified diff per changed
// object, whose "+++ MERGED-*/<group.>version.Kind.namespace.name" header
// names it. See InfoObject.Name in k8s.io/kubectl/pkg/cmd/diff/diff.go.
func diffedObjects(path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "+++ ")
		if !ok {
			continue
		}
		file, _, _ := strings.Cut(line, "\t")
		parts := strings.Split(filepath.Base(file), ".")
		if len(parts) < 4 {
			return nil, fmt.Errorf("kubectl diff header %q names no object", sc.Text())
		}
		n := len(parts)
		out[parts[n-3]+"/"+parts[n-2]+"/"+parts[n-1]] = true
	}
	return out, sc.Err()
}

// requestLine matches kubectl's request log at -v=6, in the structured form
// of client-go 0.31 and later and in the older text form.
var requestLine = regexp.MustCompile(`"Response" verb="([A-Z]+)" url="https?://|\] ([A-Z]+) https?://\S+ \d{3} `)

// countRequests counts the requests in a kubectl -v=6 log, by verb.
func countRequests(path string) (map[string]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int64{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		m := requestLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		out[m[1]+m[2]]++
	}
	return out, sc.Err()
}

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}
