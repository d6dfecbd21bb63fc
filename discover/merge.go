package discover

import (
	"errors"
	"fmt"

	"github.com/calricon/driftscan/config"
)

// Merge returns the config file's apps followed by the discovered ones. An
// app name both hold is an error that names both sources ("app web is in
// the config file and discovered from Application/argocd/web"); the
// discovered app of that name is left out and the others are returned with
// the error.
func Merge(configApps, discovered []config.App) ([]config.App, error) {
	out := make([]config.App, 0, len(configApps)+len(discovered))
	seen := map[string]config.App{}
	var errs []error
	for _, list := range [][]config.App{configApps, discovered} {
		for _, app := range list {
			if other, dup := seen[app.Name]; dup {
				a, b := origin(other), origin(app)
				if a == b {
					errs = append(errs, fmt.Errorf("app %s is defined twice, both %s", app.Name, a))
				} else {
					errs = append(errs, fmt.Errorf("app %s is %s and %s", app.Name, a, b))
				}
				continue
			}
			seen[app.Name] = app
			out = append(out, app)
		}
	}
	return out, errors.Join(errs...)
}

// origin says where an app comes from.
func origin(app config.App) string {
	if app.GitOps != nil {
		return "discovered from " + app.GitOps.Object
	}
	return "in the config file"
}

// Into adds what r discovered to cfg: the apps after cfg's own (Merge) and
// the imported ignore rules. An app name both hold is an error; the apps are
// still added without the duplicate.
func (r Result) Into(cfg *config.Config) error {
	apps, err := Merge(cfg.Apps, r.Apps)
	cfg.Apps = apps
	cfg.Ignore = append(cfg.Ignore, r.Ignore...)
	return err
}

// RulesInto adds to cfg only the imported ignore rules of the apps cfg names,
// as that app's debts, and no app: the rules of the other apps have nothing
// here to hide (--import-argocd without --from).
func (r Result) RulesInto(cfg *config.Config) {
	names := map[string]bool{}
	for _, a := range cfg.Apps {
		names[a.Name] = true
	}
	for _, rule := range r.Ignore {
		if names[rule.App] {
			cfg.Ignore = append(cfg.Ignore, rule)
		}
	}
}
