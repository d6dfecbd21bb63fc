package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/report"
)

// argoSample is the most objects the Argo CD cross-check diffs.
const argoSample = 1000

// ArgoCheck compares driftscan's report with Argo CD's own diff
// (gitops-engine pkg/diff, structured-merge mode as for a ServerSideApply=true
// app, run by the argodiff command of fixtures/controlplane) on a sample of
// the estate: every drifted object up to argoSample, then an even stride of
// the others. It is optional: Skipped says why it did not run.
type ArgoCheck struct {
	Skipped string
	Sampled int
	// ArgoModified counts the sampled objects Argo's diff shows modified;
	// Drifted and ChangedOrRemoved the sampled objects driftscan reports
	// Drifted and with a Changed or Removed finding.
	ArgoModified, Drifted, ChangedOrRemoved int
	// ChangedNotArgo (a Changed/Removed finding Argo does not show) and
	// ArgoNotDrifted (Argo modified, driftscan not Drifted) break the
	// agreement; DriftedNotArgo are the expected rest (Added-only drift such
	// as a webhook's sidecar, which Argo's diff hides), by actor.
	ChangedNotArgo, ArgoNotDrifted []string
	DriftedNotArgo                 map[Actor]int
	Errors                         []string
	Seconds                        float64
}

// Holds says whether both agreement rules hold on the sample.
func (a *ArgoCheck) Holds() bool {
	return a.Skipped == "" && len(a.ChangedNotArgo) == 0 && len(a.ArgoNotDrifted) == 0 && len(a.Errors) == 0
}

// argoCheck runs the cross-check when the argodiff binary is built next to
// the control plane binaries.
func argoCheck(ctx context.Context, b *bed, rep *report.Report, outDir string, workers int) *ArgoCheck {
	a := &ArgoCheck{DriftedNotArgo: map[Actor]int{}}
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		dir, _ = cluster.Assets()
	}
	bin := filepath.Join(dir, "argodiff")
	if _, err := os.Stat(bin); err != nil || dir == "" {
		a.Skipped = "no argodiff binary in " + dir + " (make testbin builds it)"
		return a
	}
	start := time.Now()
	say("cross-checking with Argo CD's diff (gitops-engine) on up to %d objects...", argoSample)

	objs := sampleObjects(b)
	a.Sampled = len(objs)
	type pair struct {
		Name    string         `json:"name"`
		Desired map[string]any `json:"desired"`
		Live    map[string]any `json:"live"`
	}
	pairs := make([]pair, len(objs))
	err := parallel(ctx, workers, len(objs), "read for argodiff", func(ctx context.Context, i int) error {
		u := objs[i]
		m, err := b.env.Mapper.RESTMapping(u.GroupVersionKind().GroupKind(), u.GroupVersionKind().Version)
		if err != nil {
			return err
		}
		live, err := b.env.Dynamic.Resource(m.Resource).Namespace(u.GetNamespace()).Get(ctx, u.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		pairs[i] = pair{Name: ref(u), Desired: u.DeepCopy().Object, Live: live.Object}
		return nil
	})
	if err != nil {
		a.Skipped = fmt.Sprintf("read live objects: %v", err)
		return a
	}
	in := filepath.Join(outDir, "argodiff-pairs.json")
	data, err := json.Marshal(pairs)
	if err == nil {
		err = os.WriteFile(in, data, 0o644)
	}
	if err != nil {
		a.Skipped = err.Error()
		return a
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "-in", in, "-kubeconfig", b.env.Kubeconfig)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		a.Skipped = fmt.Sprintf("argodiff: %v: %s", err, strings.TrimSpace(stderr.String()))
		return a
	}
	var results []struct {
		Name     string `json:"name"`
		Modified bool   `json:"modified"`
		Error    string `json:"error"`
	}
	if err := json.Unmarshal(out, &results); err != nil {
		a.Skipped = fmt.Sprintf("argodiff output: %v", err)
		return a
	}
	a.Seconds = time.Since(start).Seconds()

	status, changedOrRemoved := map[string]report.Status{}, map[string]bool{}
	for _, app := range rep.Apps {
		for _, o := range app.Objects {
			status[o.Ref()] = o.Status
			for _, f := range o.ActiveFindings() {
				if f.Type == report.TypeChanged || f.Type == report.TypeRemoved {
					changedOrRemoved[o.Ref()] = true
				}
			}
		}
	}
	for _, r := range results {
		if r.Error != "" {
			a.Errors = append(a.Errors, r.Name+": "+r.Error)
			continue
		}
		drifted := status[r.Name] == report.StatusDrifted
		if r.Modified {
			a.ArgoModified++
		}
		if drifted {
			a.Drifted++
		}
		if changedOrRemoved[r.Name] {
			a.ChangedOrRemoved++
		}
		switch {
		case changedOrRemoved[r.Name] && !r.Modified:
			a.ChangedNotArgo = append(a.ChangedNotArgo, r.Name)
		case r.Modified && !drifted:
			a.ArgoNotDrifted = append(a.ArgoNotDrifted, r.Name)
		case drifted && !r.Modified:
			actor := b.plan[r.Name]
			if actor == "" {
				actor = "not drifted by the bench"
			}
			a.DriftedNotArgo[actor]++
		}
	}
	sort.Strings(a.ChangedNotArgo)
	sort.Strings(a.ArgoNotDrifted)
	return a
}

// sampleObjects returns every object the plan drifted (up to argoSample) and
// then an even stride of the rest.
func sampleObjects(b *bed) []*unstructured.Unstructured {
	var drifted, rest []*unstructured.Unstructured
	for _, u := range b.est.Objects {
		if _, ok := b.plan[ref(u)]; ok {
			drifted = append(drifted, u)
		} else {
			rest = append(rest, u)
		}
	}
	out := drifted[:min(len(drifted), argoSample)]
	if n := argoSample - len(out); n > 0 && len(rest) > 0 {
		n = min(n, len(rest))
		for k := 0; k < n; k++ {
			out = append(out, rest[k*len(rest)/n])
		}
	}
	return out
}

// print writes the cross-check's lines.
func (a *ArgoCheck) print(w io.Writer) {
	if a == nil {
		return
	}
	if a.Skipped != "" {
		fmt.Fprintf(w, "\nArgo CD diff cross-check skipped: %s\n", a.Skipped)
		return
	}
	verdict := "HOLDS"
	if !a.Holds() {
		verdict = "BROKEN"
	}
	fmt.Fprintf(w, "\nArgo CD diff cross-check (%d objects sampled, %.1fs): %s\n", a.Sampled, a.Seconds, verdict)
	fmt.Fprintf(w, "  Argo modified %d; driftscan Drifted %d, with a Changed/Removed finding %d\n", a.ArgoModified, a.Drifted, a.ChangedOrRemoved)
	fmt.Fprintf(w, "  driftscan Changed/Removed, Argo in sync: %d%s\n", len(a.ChangedNotArgo), sample(a.ChangedNotArgo))
	fmt.Fprintf(w, "  Argo modified, driftscan not Drifted: %d%s\n", len(a.ArgoNotDrifted), sample(a.ArgoNotDrifted))
	var parts []string
	for actor, n := range a.DriftedNotArgo {
		parts = append(parts, fmt.Sprintf("%s %d", actor, n))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		parts = []string{"none"}
	}
	fmt.Fprintf(w, "  driftscan Drifted, Argo in sync (drift Argo's diff hides, see docs/argocd-diff.md): %s\n", strings.Join(parts, ", "))
	if len(a.Errors) > 0 {
		fmt.Fprintf(w, "  argodiff errors: %d%s\n", len(a.Errors), sample(a.Errors))
	}
}
