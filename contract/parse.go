package contract

import (
	"errors"
	"fmt"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/calricon/driftscan/report"
)

// UnmarshalYAML decodes a contract and remembers its line. Unknown fields
// are an error naming the field, the contract and the line.
func (c *Contract) UnmarshalYAML(n *yaml.Node) error {
	type plain Contract
	name := nodeField(n, "name")
	if err := knownFields(n, fmt.Sprintf("contract %q", name), "name", "namespaces", "namespaceSelector", "owner", "allow", "selfHeal"); err != nil {
		return err
	}
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*c = Contract(p)
	c.Line = n.Line
	return nil
}

// UnmarshalYAML decodes a rule and remembers its line.
func (r *Rule) UnmarshalYAML(n *yaml.Node) error {
	type plain Rule
	if err := knownFields(n, "allow rule", "class", "managers", "users", "groups", "webhooks", "during"); err != nil {
		return err
	}
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*r = Rule(p)
	r.Line = n.Line
	return nil
}

// UnmarshalYAML decodes a selector, refusing unknown fields.
func (s *Selector) UnmarshalYAML(n *yaml.Node) error {
	type plain Selector
	if err := knownFields(n, "namespaceSelector", "matchLabels", "matchExpressions"); err != nil {
		return err
	}
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*s = Selector(p)
	return nil
}

// knownFields fails on a mapping key that is not one of fields: yaml.v3
// does not carry KnownFields into a custom unmarshaller's Decode.
func knownFields(n *yaml.Node, what string, fields ...string) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: %s: want a mapping", n.Line, what)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if !slices.Contains(fields, k.Value) {
			return fmt.Errorf("line %d: %s: field %s not found (want one of %v)", k.Line, what, k.Value, fields)
		}
	}
	return nil
}

// nodeField returns the scalar value of key in a mapping node, "" if absent.
func nodeField(n *yaml.Node, key string) string {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1].Value
		}
	}
	return ""
}

// Validate checks every contract and names the contract and line of each
// problem: a missing name or namespaces, a name used twice, a bad glob or
// selector, an unknown class, a during other than breakglass, a selfHeal
// other than forbidden or allowed.
func Validate(cs []Contract) error {
	var errs []error
	seen := map[string]bool{}
	for i, c := range cs {
		where := fmt.Sprintf("contracts[%d]", i)
		if c.Name != "" {
			where = fmt.Sprintf("contract %q", c.Name)
		}
		if c.Line > 0 {
			where += fmt.Sprintf(" (line %d)", c.Line)
		}
		bad := func(format string, a ...any) {
			errs = append(errs, fmt.Errorf("%s: "+format, append([]any{where}, a...)...))
		}
		switch {
		case c.Name == "":
			bad("name is required")
		case !dnsLabel(c.Name):
			bad("name must be a DNS label (lower case letters, digits and -, at most %d characters): it names the admission policy", maxNameLen)
		case seen[c.Name]:
			bad("defined twice")
		}
		seen[c.Name] = true
		if len(c.Namespaces) == 0 && c.NamespaceSelector == nil {
			bad("set namespaces (globs) or a namespaceSelector")
		}
		for _, g := range c.Namespaces {
			if err := validGlob(g); err != nil {
				bad("namespaces: %v", err)
			}
		}
		if c.NamespaceSelector != nil {
			if err := c.NamespaceSelector.validate(); err != nil {
				bad("%v", err)
			}
		}
		switch c.SelfHeal {
		case "", SelfHealForbidden, SelfHealAllowed:
		default:
			bad("selfHeal %q: want forbidden or allowed", c.SelfHeal)
		}
		if len(c.Allow) == 0 {
			bad("allow is empty: every change would be a violation; write the rules (allow: [{class: \"*\"}] allows everything)")
		}
		for j, r := range c.Allow {
			rw := fmt.Sprintf("allow[%d]", j)
			if r.Line > 0 {
				rw += fmt.Sprintf(" (line %d)", r.Line)
			}
			if r.Class != AnyClass && !slices.Contains(report.Classes, r.Class) {
				bad("%s: unknown class %q (want one of %v or \"*\")", rw, r.Class, report.Classes)
			}
			if r.During != "" && r.During != DuringBreakglass {
				bad("%s: during %q: want breakglass", rw, r.During)
			}
			if len(r.Webhooks) > 0 && r.Class != report.ClassWebhook && r.Class != AnyClass {
				bad("%s: webhooks are named only for class webhook", rw)
			}
			for _, list := range [][]string{r.Managers, r.Users, r.Groups, r.Webhooks} {
				for _, g := range list {
					if err := validGlob(g); err != nil {
						bad("%s: %v", rw, err)
					}
				}
			}
		}
	}
	return errors.Join(errs...)
}

// maxNameLen: the name is a label value (driftscan.dev/contract) on the policy.
const maxNameLen = 63

func dnsLabel(s string) bool {
	if len(s) == 0 || len(s) > maxNameLen || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}
