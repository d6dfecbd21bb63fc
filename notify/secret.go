package notify

import (
	"errors"
	"fmt"
	"strings"
	"sync"
)

// secretRef names where a secret is kept: an environment variable or a
// file. Its String form names the place, never the value, and is what the
// state, logs and dry-run output show.
type secretRef struct {
	Env  string
	File string
}

func (r secretRef) String() string {
	if r.Env != "" {
		return "env:" + r.Env
	}
	return "file:" + r.File
}

func (r secretRef) set() bool { return r.Env != "" || r.File != "" }

// parseSecretRef reads the String form back, for refs kept in the state.
func parseSecretRef(s string) (secretRef, bool) {
	switch {
	case strings.HasPrefix(s, "env:") && len(s) > len("env:"):
		return secretRef{Env: s[len("env:"):]}, true
	case strings.HasPrefix(s, "file:") && len(s) > len("file:"):
		return secretRef{File: s[len("file:"):]}, true
	}
	return secretRef{}, false
}

// secrets reads secrets through the injected environment and file reader
// and remembers every value it handed out, so that errors can be scrubbed
// of them before they reach a Result, a log line or dry-run output.
type secrets struct {
	getenv   func(string) string
	readFile func(string) ([]byte, error)

	mu     sync.Mutex
	values []string
}

// read returns the secret what (for example "slack token") from r. The
// error names the variable or file, never a value.
func (s *secrets) read(what string, r secretRef) (string, error) {
	var v string
	switch {
	case r.Env != "":
		v = strings.TrimSpace(s.getenv(r.Env))
		if v == "" {
			return "", fmt.Errorf("%s: environment variable %s is empty or unset", what, r.Env)
		}
	case r.File != "":
		data, err := s.readFile(r.File)
		if err != nil {
			return "", fmt.Errorf("%s: %w", what, err)
		}
		v = strings.TrimSpace(string(data))
		if v == "" {
			return "", fmt.Errorf("%s: file %s is empty", what, r.File)
		}
	default:
		return "", fmt.Errorf("%s: not configured", what)
	}
	s.mu.Lock()
	s.values = append(s.values, v)
	s.mu.Unlock()
	return v, nil
}

// mask replaces every secret value in text with "***".
func (s *secrets) mask(text string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range s.values {
		text = strings.ReplaceAll(text, v, masked)
	}
	return text
}

// scrub returns err unchanged when its message holds no secret, else an
// error with the same message masked. The masked error does not wrap err:
// unwrapping would hand the secret back (a *url.Error names the webhook
// URL, whose path is the webhook's credential).
func (s *secrets) scrub(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if m := s.mask(msg); m != msg {
		return errors.New(m)
	}
	return err
}

// masked is how a secret is shown.
const masked = "***"
