// Package redact takes credentials out of repository URLs and of texts that
// quote them, before a URL reaches a report, an error or a log line.
//
// A URL's user and password are cut out, as url.Parse splits them (at the
// last "@" of the authority, so a password holding "@" goes whole), and the
// value of every query parameter and any fragment is replaced by "redacted":
// Git servers take tokens there too (?private_token=, ?access_token=,
// signed URLs). scp-like addresses (git@host:org/repo) keep their user,
// which is a login name and never a secret.
package redact

import (
	"errors"
	"net/url"
	"regexp"
	"strings"
)

// Redacted replaces a query value or fragment.
const Redacted = "redacted"

// URL is u without its credentials. A string that is not a URL with a
// scheme is returned as it is.
func URL(u string) string {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok || !validScheme(scheme) {
		return u
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		authority = authority[at+1:]
	} else if strings.Contains(tail, "@") {
		if _, err := url.Parse(u); err != nil {
			// Unparseable with an "@" past the authority: a password
			// holding "/" or "?" unescaped. Cut up to the last "@".
			tail = tail[strings.LastIndex(tail, "@")+1:]
			authority, tail = splitAuthority(tail)
		}
	}
	return scheme + "://" + authority + redactTail(tail)
}

// splitAuthority splits s at its first "/", "?" or "#".
func splitAuthority(s string) (string, string) {
	end := strings.IndexAny(s, "/?#")
	if end < 0 {
		return s, ""
	}
	return s[:end], s[end:]
}

// redactTail replaces the query values and the fragment of a URL's path,
// query and fragment.
func redactTail(tail string) string {
	p, frag, hasFrag := strings.Cut(tail, "#")
	p, query, hasQuery := strings.Cut(p, "?")
	if hasQuery {
		params := strings.Split(query, "&")
		for i, kv := range params {
			if k, _, ok := strings.Cut(kv, "="); ok {
				params[i] = k + "=" + Redacted
			}
		}
		p += "?" + strings.Join(params, "&")
	}
	if hasFrag && frag != "" {
		p += "#" + Redacted
	}
	return p
}

func validScheme(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case i > 0 && (r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.'):
		default:
			return false
		}
	}
	return true
}

// urlInText finds URLs with a scheme in a text: up to a space, a quote or
// an angle bracket.
var urlInText = regexp.MustCompile("[a-zA-Z][a-zA-Z0-9+.-]*://[^\\s\"'<>`]+")

// Text is s with every URL in it redacted (see URL) and every secret
// masked as "***", as it is and URL-escaped. Empty secrets are ignored.
func Text(s string, secrets ...string) string {
	s = urlInText.ReplaceAllStringFunc(s, URL)
	for _, secret := range secrets {
		if secret == "" {
			continue
		}
		for _, form := range []string{secret, url.PathEscape(secret), url.QueryEscape(secret)} {
			s = strings.ReplaceAll(s, form, "***")
		}
	}
	return s
}

// Maskable are the values worth masking: those of three bytes or more
// (masking "1" or "on" would garble a text and hide nothing).
func Maskable(values []string) []string {
	var out []string
	for _, v := range values {
		if len(v) >= 3 {
			out = append(out, v)
		}
	}
	return out
}

// Error is err with its text passed through Text: URLs redacted, secrets
// masked. It matches what err matched with errors.Is, but does not unwrap
// to err, whose text still holds them. A nil err is nil.
func Error(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	return &scrubbed{msg: Text(err.Error(), secrets...), err: err}
}

type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string        { return e.msg }
func (e *scrubbed) Is(target error) bool { return errors.Is(e.err, target) }
