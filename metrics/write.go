package metrics

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// WriteFile writes g's metrics to path in the Prometheus text format. It
// writes a temporary file in the same folder and renames it over path, so a
// reader such as node-exporter's textfile collector (which reads only files
// ending in .prom) never sees half a file. The file is world-readable (0644).
func WriteFile(path string, g prometheus.Gatherer) error {
	if err := prometheus.WriteToTextfile(path, g); err != nil {
		return fmt.Errorf("write metrics file %s: %w", path, err)
	}
	return nil
}
