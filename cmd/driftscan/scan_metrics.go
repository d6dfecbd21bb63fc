package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/calricon/driftscan/metrics"
	"github.com/calricon/driftscan/report"
	"github.com/calricon/driftscan/shard"
)

// metricsFlags write or push Prometheus metrics at the end of a run.
type metricsFlags struct {
	pushgateway string
	file        string
}

func (m *metricsFlags) add(f *pflag.FlagSet) {
	f.StringVar(&m.pushgateway, "pushgateway", "", "push Prometheus metrics to this Pushgateway at the end of the run")
	f.StringVar(&m.file, "metrics-file", "", "write Prometheus metrics to this file (node-exporter's textfile collector format)")
}

// run writes and pushes the metrics of r.
func (m *metricsFlags) run(ctx context.Context, r *report.Report, sh *shard.Spec) error {
	if m.pushgateway == "" && m.file == "" {
		return nil
	}
	reg := metrics.Gather(r, time.Now())
	if m.file != "" {
		if err := metrics.WriteFile(m.file, reg); err != nil {
			return fmt.Errorf("--metrics-file: %w", err)
		}
	}
	if m.pushgateway != "" {
		grouping := map[string]string{"cluster": r.Cluster}
		if sh != nil {
			grouping["shard"] = strconv.Itoa(sh.Index)
		}
		if err := metrics.Push(ctx, m.pushgateway, "driftscan", reg, nil, grouping); err != nil {
			return fmt.Errorf("--pushgateway: %w", err)
		}
	}
	return nil
}
