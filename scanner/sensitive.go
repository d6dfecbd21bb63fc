package scanner

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/report"
)

// sensitive finds values outside a Secret's data that hold credentials all
// the same, so that they are masked like Secret data (unless the scan was
// told to reveal them, for backport --allow-sensitive):
//   - the value of an environment variable whose name matches one of
//     envNames (config.DefaultSensitiveEnvNames: password, secret, token,
//     key, credential), in any container of any kind: Git often carries
//     them in plain env values, and a human adds one live;
//   - the data of a Secret-like kind from another API group, whose kind
//     ends in "Secret" (Bitnami's SealedSecret, External Secrets'
//     ExternalSecret, ClusterExternalSecret, PushSecret, Vault's
//     VaultStaticSecret, ...): whatever it holds under secretLikeRoots.
type sensitive struct {
	envNames []*regexp.Regexp
}

func newSensitive(exprs []string) (*sensitive, error) {
	if len(exprs) == 0 {
		exprs = config.DefaultSensitiveEnvNames
	}
	s := &sensitive{}
	for _, e := range exprs {
		re, err := regexp.Compile(e)
		if err != nil {
			return nil, fmt.Errorf("sensitiveEnvNames %q: %w", e, err)
		}
		s.envNames = append(s.envNames, re)
	}
	return s, nil
}

// secretLikeRoots are where Secret-like kinds keep what they protect or
// generate: their own data, SealedSecret's encryptedData and template, an
// ExternalSecret's data, dataFrom and target template.
var secretLikeRoots = []string{".data", ".stringData", ".spec.encryptedData", ".spec.data", ".spec.dataFrom",
	".spec.template", ".spec.target.template"}

// matches reports whether f holds a sensitive value of an object of group
// and kind.
func (s *sensitive) matches(group, kind string, f *report.Finding) bool {
	if group != "" && strings.HasSuffix(kind, "Secret") {
		for _, root := range secretLikeRoots {
			if under(f.Path, root) || under(root, f.Path) {
				return true
			}
		}
	}
	return s.envPath(f.PathElements) || s.envValue(f.GitValue) || s.envValue(f.LiveValue)
}

// under reports whether path is root or below it.
func under(path, root string) bool {
	return path == root || strings.HasPrefix(path, root+".") || strings.HasPrefix(path, root+"[")
}

// envPath reports whether the path runs through an env entry with a
// sensitive name: f:env then k:{"name":"DB_PASSWORD"}.
func (s *sensitive) envPath(elems []string) bool {
	for i := 0; i+1 < len(elems); i++ {
		if elems[i] != "f:env" || !strings.HasPrefix(elems[i+1], "k:") {
			continue
		}
		var key struct {
			Name string `json:"name"`
		}
		if json.Unmarshal([]byte(strings.TrimPrefix(elems[i+1], "k:")), &key) == nil && s.envName(key.Name) {
			return true
		}
	}
	return false
}

// envValue reports whether v (a whole container, an env list, a pod
// template) holds an env entry with a sensitive name and a value.
func (s *sensitive) envValue(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		if name, ok := x["name"].(string); ok && s.envName(name) {
			if _, ok := x["value"]; ok {
				return true
			}
		}
		for _, e := range x {
			if s.envValue(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if s.envValue(e) {
				return true
			}
		}
	}
	return false
}

func (s *sensitive) envName(name string) bool {
	for _, re := range s.envNames {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}
