package backport

import (
	"bufio"
	"bytes"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// codeownersFiles are where GitHub, GitLab and Gitea look, in their order.
var codeownersFiles = []string{".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS", ".gitlab/CODEOWNERS", ".gitea/CODEOWNERS"}

// CodeOwners are the owners that the repository's CODEOWNERS file at root
// names for files (slash-separated, relative to root): for each file the
// last matching line, as GitHub and GitLab read it; "@user" and
// "@org/team" entries only (an e-mail address names no reviewer). Nil
// when the repository has no CODEOWNERS.
func CodeOwners(root string, files []string) []string {
	data := readCodeowners(root)
	if data == nil {
		return nil
	}
	type rule struct {
		re     *regexp.Regexp
		owners []string
	}
	var rules []rule
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "[") || strings.HasPrefix(line, "^[") {
			continue // comments, GitLab sections
		}
		fields := strings.Fields(line)
		var owners []string
		for _, f := range fields[1:] {
			if strings.HasPrefix(f, "#") {
				break
			}
			if strings.HasPrefix(f, "@") {
				owners = append(owners, f)
			}
		}
		rules = append(rules, rule{re: codeownersPattern(fields[0]), owners: owners})
	}
	var out []string
	for _, f := range files {
		for i := len(rules) - 1; i >= 0; i-- {
			if rules[i].re.MatchString(f) {
				out = append(out, rules[i].owners...)
				break
			}
		}
	}
	return dedupe(out)
}

func readCodeowners(root string) []byte {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil
	}
	defer r.Close()
	for _, f := range codeownersFiles {
		if data, err := r.ReadFile(filepath.FromSlash(f)); err == nil {
			return data
		}
	}
	return nil
}

// codeownersPattern turns a gitignore-style pattern into a regular
// expression on a slash-separated path: a leading "/" or an inner "/"
// anchors it at the root, a trailing "/" matches everything under a
// folder, "*" matches within a segment, "**" across segments, and a
// pattern matches a folder's contents too.
func codeownersPattern(p string) *regexp.Regexp {
	anchored := strings.HasPrefix(p, "/") || strings.Contains(strings.TrimSuffix(p, "/"), "/")
	p = strings.TrimPrefix(p, "/")
	dir := strings.HasSuffix(p, "/")
	p = strings.TrimSuffix(p, "/")
	var b strings.Builder
	if !anchored {
		b.WriteString("(^|.*/)")
	} else {
		b.WriteString("^")
	}
	for i := 0; i < len(p); i++ {
		switch {
		case strings.HasPrefix(p[i:], "**/"):
			b.WriteString("(.*/)?")
			i += 2
		case strings.HasPrefix(p[i:], "**"):
			b.WriteString(".*")
			i++
		case p[i] == '*':
			b.WriteString("[^/]*")
		case p[i] == '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(string(p[i])))
		}
	}
	if dir || p == "" {
		b.WriteString("/.*$")
	} else {
		b.WriteString("(/.*)?$")
	}
	re, err := regexp.Compile(b.String())
	if err != nil {
		return regexp.MustCompile(`^` + regexp.QuoteMeta(path.Clean(p)) + `$`)
	}
	return re
}
