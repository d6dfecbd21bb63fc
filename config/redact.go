package config

import (
	"fmt"
	"regexp"

	"gopkg.in/yaml.v3"
)

// DefaultSensitiveEnvNames are the environment variable names whose values
// are masked like Secret data unless SensitiveEnvNames says otherwise: the
// words people put in the names of credentials.
var DefaultSensitiveEnvNames = []string{`(?i)(password|passwd|secret|token|key|credential)`}

// RedactRule masks the values of the findings whose path matches Path, a
// regular expression on the finding's path (.spec.template.spec...), like
// Secret data. Group and Kind, when set, limit it to objects of that API
// group ("" is also the core group when Kind is set) and kind.
//
// In the config a rule is either a bare expression, as before rules had a
// group and kind, or an object:
//
//	redact:
//	- '\.data\.token'
//	- {group: example.com, kind: Database, path: '^\.spec\.password'}
type RedactRule struct {
	Path  string `yaml:"path"`
	Group string `yaml:"group"`
	Kind  string `yaml:"kind"`
}

// UnmarshalYAML reads a bare expression or a {path, group, kind} object.
func (r *RedactRule) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*r = RedactRule{Path: n.Value}
		return nil
	}
	type plain RedactRule
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	// Node.Decode does not refuse unknown keys as the file's decoder does.
	for i := 0; i+1 < len(n.Content); i += 2 {
		switch k := n.Content[i].Value; k {
		case "path", "group", "kind":
		default:
			return fmt.Errorf("line %d: field %s not found in type config.RedactRule", n.Content[i].Line, k)
		}
	}
	*r = RedactRule(p)
	return nil
}

// Validate checks that the rule has a path that compiles.
func (r RedactRule) Validate() error {
	if r.Path == "" {
		return fmt.Errorf("path is required")
	}
	if _, err := regexp.Compile(r.Path); err != nil {
		return fmt.Errorf("path %q: %w", r.Path, err)
	}
	if r.Group != "" && r.Kind == "" {
		return fmt.Errorf("group %s needs a kind", r.Group)
	}
	return nil
}
