package classify

import (
	"errors"
	"fmt"
	"time"
)

// IgnoreRule hides matching findings. Every rule is a debt: it has an owner,
// a reason and a review date after which it hides nothing.
type IgnoreRule struct {
	Group                 string   `yaml:"group"`
	Kind                  string   `yaml:"kind"`
	Namespace             string   `yaml:"namespace"`
	Name                  string   `yaml:"name"`
	JSONPointers          []string `yaml:"jsonPointers"`
	JQPathExpressions     []string `yaml:"jqPathExpressions"`
	ManagedFieldsManagers []string `yaml:"managedFieldsManagers"`
	Owner                 string   `yaml:"owner"`
	Reason                string   `yaml:"reason"`
	Expires               string   `yaml:"expires"`
	// App limits the rule to one app (rules imported from Argo CD).
	App string `yaml:"app"`

	expires time.Time
}

// Validate checks that the rule names its owner, reason and review date.
func (r *IgnoreRule) Validate() error {
	var errs []error
	if r.Owner == "" {
		errs = append(errs, errors.New("owner is required"))
	}
	if r.Reason == "" {
		errs = append(errs, errors.New("reason is required"))
	}
	if r.Expires == "" {
		errs = append(errs, errors.New("expires is required"))
	} else if t, err := time.Parse(time.DateOnly, r.Expires); err != nil {
		errs = append(errs, fmt.Errorf("expires %q: want a date like 2027-03-01", r.Expires))
	} else {
		r.expires = t
	}
	if len(r.JSONPointers)+len(r.JQPathExpressions)+len(r.ManagedFieldsManagers) == 0 {
		errs = append(errs, errors.New("one of jsonPointers, jqPathExpressions or managedFieldsManagers is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("ignore rule for %s %q: %w", r.Kind, r.Name, err)
	}
	return nil
}
