// Command secretsrss measures what a scan holds when the apps declare a few
// small Secrets and the cluster has many big ones elsewhere (issue 17 item
// 10: the scan listed Secrets cluster-wide and held every one of them).
//
// It starts the local kube-apiserver and etcd the tests use, creates one
// tiny Secret in each of -declared namespaces (declared by one app, so that
// the app spans more namespaces than the scan's cluster-wide threshold) and
// -big Secrets of -size KiB in other namespaces, then runs each -driftscan
// binary once through bench/rusage, under prlimit's address-space bound
// -limit and a timeout, and prints each binary's peak RSS:
//
//	go build -o /tmp/rusage ./bench/rusage
//	go run ./bench/secretsrss -rusage /tmp/rusage -driftscan before=/tmp/driftscan-main -driftscan after=bin/driftscan
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/calricon/driftscan/fixtures/cluster"
)

type binaries []string

func (b *binaries) String() string     { return strings.Join(*b, ",") }
func (b *binaries) Set(v string) error { *b = append(*b, v); return nil }

func main() {
	var bins binaries
	declared := flag.Int("declared", 4, "namespaces with one tiny declared Secret each")
	big := flag.Int("big", 100, "big Secrets elsewhere")
	size := flag.Int("size", 900, "size of each big Secret, KiB")
	limit := flag.String("limit", "8589934592", "address-space bound of each scan in bytes (prlimit --as)")
	timeout := flag.Duration("timeout", 5*time.Minute, "bound of each scan")
	rusage := flag.String("rusage", "", "the bench/rusage launcher")
	flag.Var(&bins, "driftscan", "NAME=BINARY to measure (repeatable)")
	flag.Parse()
	ctrllog.SetLogger(logr.Discard())
	if err := run(*declared, *big, *size, *limit, *timeout, *rusage, bins); err != nil {
		fmt.Fprintf(os.Stderr, "secretsrss: %v\n", err)
		os.Exit(1)
	}
}

func run(declared, big, sizeKiB int, limit string, timeout time.Duration, rusage string, bins []string) error {
	if rusage == "" || len(bins) == 0 {
		return fmt.Errorf("give -rusage and at least one -driftscan NAME=BINARY")
	}
	ctx := context.Background()
	env, err := cluster.Start()
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	dir, err := os.MkdirTemp("", "secretsrss-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	var docs []string
	for i := range declared {
		ns := fmt.Sprintf("app-%d", i)
		if err := env.CreateNamespace(ctx, ns, nil); err != nil {
			return err
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tiny", Namespace: ns}, StringData: map[string]string{"token": "tiny"}}
		if _, err := env.Client.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{FieldManager: "argocd-controller"}); err != nil {
			return err
		}
		docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: tiny, namespace: %s}\nstringData: {token: tiny}\n", ns))
	}
	payload := strings.Repeat("x", sizeKiB<<10)
	for i := range big {
		ns := fmt.Sprintf("tenant-%d", i/10)
		if i%10 == 0 {
			if err := env.CreateNamespace(ctx, ns, nil); err != nil {
				return err
			}
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("big-%d", i), Namespace: ns}, Data: map[string][]byte{"blob": []byte(payload)}}
		if _, err := env.Client.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create big Secret %d: %w", i, err)
		}
	}
	appDir := filepath.Join(dir, "app")
	if err := os.MkdirAll(appDir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(appDir, "secrets.yaml"), []byte(strings.Join(docs, "---\n")), 0o644); err != nil {
		return err
	}
	cfg := "apiVersion: driftscan.dev/v1alpha1\nkind: ScanConfig\nappliers: [argocd-controller]\napps:\n- {name: tiny, namespace: app-0, source: {path: app}}\n"
	if err := os.WriteFile(filepath.Join(dir, "scan.yaml"), []byte(cfg), 0o644); err != nil {
		return err
	}
	fmt.Printf("%d tiny Secrets declared in %d namespaces; %d Secrets of %d KiB elsewhere (%d MiB)\n", declared, declared, big, sizeKiB, big*sizeKiB>>10)
	for _, nb := range bins {
		name, bin, ok := strings.Cut(nb, "=")
		if !ok {
			return fmt.Errorf("-driftscan %q: want NAME=BINARY", nb)
		}
		result := filepath.Join(dir, name+".rusage.json")
		report := filepath.Join(dir, name+".report.json")
		cctx, cancel := context.WithTimeout(ctx, timeout)
		cmd := exec.CommandContext(cctx, "prlimit", "--as="+limit, "--", rusage, result, "--", bin,
			"scan", "--kubeconfig", env.Kubeconfig, "--config", filepath.Join(dir, "scan.yaml"), "-o", "json="+report, "--quiet", "--fail-on", "none")
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			return fmt.Errorf("%s: %w\n%s", name, err, out)
		}
		var r struct {
			WallSeconds float64 `json:"wallSeconds"`
			MaxRSSKiB   int64   `json:"maxRssKiB"`
			FloorKiB    int64   `json:"floorKiB"`
		}
		data, err := os.ReadFile(result)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(data, &r); err != nil {
			return err
		}
		var rep struct {
			Summary struct{ Objects, Errors int } `json:"summary"`
		}
		if data, err := os.ReadFile(report); err == nil {
			_ = json.Unmarshal(data, &rep)
		}
		fmt.Printf("%-8s peak RSS %6.1f MiB (launcher floor %.1f MiB), %.2fs, %d objects, %d errors\n",
			name, float64(r.MaxRSSKiB)/1024, float64(r.FloorKiB)/1024, r.WallSeconds, rep.Summary.Objects, rep.Summary.Errors)
	}
	return nil
}
