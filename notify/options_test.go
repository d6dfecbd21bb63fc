package notify

import (
	"strings"
	"testing"

	"github.com/calricon/driftscan/config"
)

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"a negative renotify", Options{RenotifyAfter: -1}, "must not be negative"},
		{"a config error", Options{Owners: config.Owners{"a": {Slack: &config.SlackRoute{Channel: "#a"}}}}, "names no token or webhook"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate = %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

func TestSecretsFromFiles(t *testing.T) {
	s := &secrets{
		getenv: func(string) string { return "" },
		readFile: func(p string) ([]byte, error) {
			if p == "/run/secrets/pd" {
				return []byte("  R0UT1NG\n"), nil
			}
			return nil, &fileError{p}
		},
	}
	v, err := s.read("routing key", secretRef{File: "/run/secrets/pd"})
	if err != nil || v != "R0UT1NG" {
		t.Errorf("read = %q, %v; want the file's trimmed content", v, err)
	}
	if _, err := s.read("token", secretRef{Env: "SLACK_BOT_TOKEN"}); err == nil || !strings.Contains(err.Error(), "SLACK_BOT_TOKEN is empty") {
		t.Errorf("unset env: %v", err)
	}
	if got := s.mask("key R0UT1NG here"); got != "key *** here" {
		t.Errorf("mask = %q", got)
	}
}

type fileError struct{ path string }

func (e *fileError) Error() string { return "open " + e.path + ": no such file" }
