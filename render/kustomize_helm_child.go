package render

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/calricon/driftscan/config"
)

// kustomizeHelm is the child kustomize runs as helm (kustomize_helm.go):
// it answers args as the helm binary would and returns the exit code. A
// failure is written to stderr and to error.txt in dir, for the build to
// report in its own words.
func kustomizeHelm(dir string, job helmJob, args []string) int {
	ctx := context.Background()
	if !job.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, job.Deadline)
		defer cancel()
		// A template that loops without looking at ctx still ends: the
		// build waits on this process while holding kustomize's lock.
		t := time.AfterFunc(time.Until(job.Deadline)+time.Second, func() {
			fail(dir, errors.New("did not finish before the render's deadline"))
			os.Exit(1)
		})
		defer t.Stop()
	}
	// Nor does it outlive the scan: once its parent (kustomize, in the
	// scan's process) is gone, it is adopted, and stops.
	parent := os.Getppid()
	go func() {
		for range time.Tick(500 * time.Millisecond) {
			if os.Getppid() != parent {
				os.Exit(1)
			}
		}
	}()
	if err := answerAsHelm(ctx, job, args, os.Stdout); err != nil {
		fail(dir, err)
		return 1
	}
	return 0
}

func fail(dir string, err error) {
	fmt.Fprintln(os.Stderr, "Error:", err)
	_ = os.WriteFile(filepath.Join(dir, helmErrName), []byte(err.Error()), 0o600)
}

// answerAsHelm answers the three commands kustomize's generator runs.
func answerAsHelm(ctx context.Context, job helmJob, args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New("no command")
	}
	switch args[0] {
	case "version":
		_, err := fmt.Fprintln(out, helmVersion())
		return err
	case "pull":
		return helmPull(job, args[1:])
	case "template":
		manifest, err := helmTemplateArgs(ctx, job, args[1:])
		if err != nil {
			return err
		}
		_, err = io.WriteString(out, manifest)
		return err
	}
	return fmt.Errorf("helm %s: not a command kustomize runs", args[0])
}

// helmVersion is the Helm SDK's version, as `helm version --short` says
// it (kustomize wants v3 or v4).
func helmVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, m := range info.Deps {
			if m.Path == "helm.sh/helm/v4" && strings.HasPrefix(m.Version, "v4.") {
				return m.Version
			}
		}
	}
	return "v4.0.0"
}

// helmArgs are a helm command line: its positional arguments and its
// flags, each flag's values in order (a boolean's value is "true").
type helmArgs struct {
	positional []string
	flags      map[string][]string
}

// helmBoolFlags are the flags kustomize passes that take no value.
var helmBoolFlags = map[string]bool{
	"--untar": true, "--devel": true, "--include-crds": true, "--skip-tests": true,
	"--no-hooks": true, "--debug": true, "--generate-name": true,
}

func parseHelmArgs(args []string) (helmArgs, error) {
	a := helmArgs{flags: map[string][]string{}}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if !strings.HasPrefix(arg, "-") {
			a.positional = append(a.positional, arg)
			continue
		}
		name, value, ok := strings.Cut(arg, "=")
		if name == "-f" {
			name = "--values"
		}
		switch {
		case helmBoolFlags[name]:
			value = "true"
		case !ok:
			if i+1 >= len(args) {
				return a, fmt.Errorf("flag %s needs a value", name)
			}
			i++
			value = args[i]
		}
		a.flags[name] = append(a.flags[name], value)
	}
	return a, nil
}

func (a helmArgs) last(name string) string {
	if v := a.flags[name]; len(v) > 0 {
		return v[len(v)-1]
	}
	return ""
}

// helmPull says whether the build fetched the chart `helm pull --untar
// --untardir <dir> [--repo <repo>] <chart>` names.
func helmPull(job helmJob, args []string) error {
	a, err := parseHelmArgs(args)
	if err != nil {
		return err
	}
	if len(a.positional) != 1 {
		return fmt.Errorf("helm pull: want one chart, have %q", a.positional)
	}
	folder := filepath.Join(a.last("--untardir"), filepath.Base(a.positional[0]))
	if _, ok := job.Charts[folder]; !ok {
		return fmt.Errorf("chart %s was not fetched for %s", a.positional[0], folder)
	}
	return nil
}

// helmTemplateArgs renders the chart of `helm template <release> <chart>
// [--namespace n] [-f values]... [--api-versions v]... [--kube-version v]
// [--include-crds] [--skip-tests] [--no-hooks]`, as helmTemplate renders
// every chart (hooks left out).
func helmTemplateArgs(ctx context.Context, job helmJob, args []string) (string, error) {
	a, err := parseHelmArgs(args)
	if err != nil {
		return "", err
	}
	if a.flags["--generate-name"] != nil {
		return "", errors.New("the chart has no releaseName: helm would name its release anew on every render, so no object it makes would match the cluster; give it a releaseName")
	}
	if a.flags["--name-template"] != nil {
		return "", errors.New("nameTemplate is not supported: give the chart a releaseName")
	}
	if len(a.positional) != 2 {
		return "", fmt.Errorf("helm template: want a release and a chart, have %q", a.positional)
	}
	release, chartDir := a.positional[0], a.positional[1]
	opts := Options{Dir: chartDir, Root: job.Root, Namespace: a.last("--namespace"), KubeVersion: a.last("--kube-version"),
		APIVersions: a.flags["--api-versions"],
		Helm:        &config.HelmSource{ReleaseName: release, SkipCRDs: a.flags["--include-crds"] == nil}}
	// The cluster's, as Argo CD's command line gives them, over the chart's.
	if job.KubeVersion != "" {
		opts.KubeVersion = job.KubeVersion
	}
	if job.APIVersions != nil {
		opts.APIVersions = job.APIVersions
	}
	if got, ok := job.Charts[chartDir]; ok {
		opts.Dir, opts.Root = got, got
	} else if r, err := filepath.EvalSymlinks(chartDir); err != nil || !within(job.Root, r) {
		return "", fmt.Errorf("chart %s is not inside the repository %s", chartDir, job.Root)
	} else {
		opts.Dir = r
	}
	for _, f := range a.flags["--values"] {
		data, err := readValuesFile(f)
		if err != nil {
			return "", err
		}
		opts.ExtraValues = append(opts.ExtraValues, data)
	}
	src, err := openRoot(opts)
	if err != nil {
		return "", err
	}
	defer src.Close()
	files, err := chartFiles(src)
	if err == nil {
		files, _, err = withLocalDependencies(src, files)
	}
	if err != nil {
		return "", err
	}
	ch, err := loader.LoadFiles(files)
	if err != nil {
		return "", err
	}
	return helmTemplate(ctx, ch, src, opts)
}

// readValuesFile reads a values file kustomize passes: its merge of the
// chart's values and valuesInline, in its temporary folder, or an
// additionalValuesFiles entry it read through the build's bounds.
func readValuesFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, _, over, err := readAtMost(f, MaxManifestBytes)
	if err == nil && over {
		err = fmt.Errorf("values file %s: over the limit of %d bytes", name, MaxManifestBytes)
	}
	return data, err
}
