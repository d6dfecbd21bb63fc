package config

// Audit is the config's audit section: where the cluster's audit log is, to
// name the user behind each finding (docs/audit.md).
type Audit struct {
	// Files are audit log files or folders of rotated ones, relative to
	// the config file's folder; "-" is standard input.
	Files []string `yaml:"files"`
}
