package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// Set by the linker: -X main.version=... -X main.commit=...
var (
	version = "dev"
	commit  = ""
)

// versionInfo is what `driftscan version` prints.
type versionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

func currentVersion() versionInfo {
	v := versionInfo{Version: version, Commit: commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if v.Commit == "" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					v.Commit = s.Value
				}
			}
		}
	}
	if v.Commit == "" {
		v.Commit = "unknown"
	}
	return v
}

func newVersionCommand(s streams) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := currentVersion()
			switch output {
			case "json":
				enc := json.NewEncoder(s.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(v)
			case "yaml":
				data, err := yaml.Marshal(v)
				if err != nil {
					return err
				}
				_, err = s.Out.Write(data)
				return err
			case "":
				_, err := fmt.Fprintf(s.Out, "driftscan %s (commit %s, %s, %s)\n", v.Version, v.Commit, v.GoVersion, v.Platform)
				return err
			default:
				return fmt.Errorf("unknown output %q: want json, yaml or nothing", output)
			}
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json or yaml")
	return cmd
}
