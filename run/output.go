package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/calricon/driftscan/metrics"
	"github.com/calricon/driftscan/report"
)

// Metrics say where the run's metrics go; both empty writes none.
type Metrics struct {
	// File is written in node-exporter's textfile collector format.
	File string
	// Pushgateway is the URL of a Prometheus Pushgateway to push to, grouped
	// by cluster (and shard).
	Pushgateway string
}

// writeOutputs writes the report in every requested format: files
// atomically, the rest to o.Out.
func writeOutputs(r *report.Report, o Options) error {
	var errs []error
	for _, out := range o.Outputs {
		wo := o.Write
		if out.File == "" {
			wo.Color = wo.Color && out.Format == report.FormatTable
			if err := report.Write(o.Out, out.Format, r, wo); err != nil {
				errs = append(errs, fmt.Errorf("write %s: %w", out.Format, err))
			}
			continue
		}
		// The terminal's colour and width are not a file's.
		wo.Color, wo.Width = false, 0
		err := report.WriteFileAtomic(out.File, func(w io.Writer) error { return report.Write(w, out.Format, r, wo) })
		if err != nil {
			errs = append(errs, fmt.Errorf("write %s to %s: %w", out.Format, out.File, err))
			continue
		}
		o.Logger.Info("wrote report", "format", out.Format, "file", out.File)
	}
	return errors.Join(errs...)
}

// writeMetrics writes and pushes the metrics of r.
func writeMetrics(ctx context.Context, r *report.Report, o Options) error {
	m := o.Metrics
	if m.Pushgateway == "" && m.File == "" {
		return nil
	}
	reg := metrics.Gather(r, o.Now())
	if m.File != "" {
		if err := metrics.WriteFile(m.File, reg); err != nil {
			return fmt.Errorf("--metrics-file: %w", err)
		}
	}
	if m.Pushgateway != "" {
		grouping := map[string]string{"cluster": r.Cluster}
		if o.Shard != "" {
			sh, err := parseShard(o.Shard)
			if err != nil {
				return err
			}
			grouping["shard"] = strconv.Itoa(sh.Index)
		}
		if err := metrics.Push(ctx, m.Pushgateway, "driftscan", reg, nil, grouping); err != nil {
			return fmt.Errorf("--pushgateway: %w", err)
		}
	}
	return nil
}
