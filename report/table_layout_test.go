package report

import (
	"errors"
	"strings"
	"testing"
)

func TestCutKeepsBothEnds(t *testing.T) {
	tests := []struct {
		name, in string
		width    int
		want     string
	}{
		{"a value that fits is left whole", "nginx:1.25", 10, "nginx:1.25"},
		{"an image keeps its registry and its tag", "ghcr.io/acme/web:1.4.3-hotfix", 20, "ghcr.i…:1.4.3-hotfix"},
		{"a hash keeps its algorithm and last digits", "sha256:0123456789abcdef0123456789abcdef", 21, "sha256…23456789abcdef"},
		{"width 0 leaves it whole", "ghcr.io/acme/web:1.4.3-hotfix", 0, "ghcr.io/acme/web:1.4.3-hotfix"},
		{"width 1 is the ellipsis alone", "abc", 1, "…"},
		{"characters, not bytes, are counted", "ääääääääää", 5, "ä…äää"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cut(tt.in, tt.width)
			if got != tt.want {
				t.Errorf("cut(%q, %d) = %q, want %q", tt.in, tt.width, got, tt.want)
			}
			if tt.width > 0 && textWidth(got) > tt.width {
				t.Errorf("cut(%q, %d) is %d wide", tt.in, tt.width, textWidth(got))
			}
		})
	}
}

func TestCutStartKeepsTheFieldName(t *testing.T) {
	if got, want := cutStart(`.spec.template.spec.containers[name="app"].image`, 20), `…ers[name="app"].image`[len("…ers"):]; !strings.HasSuffix(got, want) || textWidth(got) != 20 {
		t.Errorf("cutStart = %q, want 20 columns ending in %q", got, want)
	}
}

func TestWrapBreaksProseAtSpaces(t *testing.T) {
	tests := []struct {
		name  string
		line  string
		width int
		hang  int
		want  []string
	}{
		{"a line that fits is one line", "  error: boom", 20, 4, []string{"  error: boom"}},
		{"continuations start at the hang", "  error: the server could not find it", 20, 4, []string{"  error: the server", "    could not find", "    it"}},
		{"double spaces between words are kept", "APP web  owner team-web", 16, 4, []string{"APP web  owner", "    team-web"}},
		{"a word longer than a line stays whole", "see https://example.com/a/very/long/link now", 16, 2, []string{"see", "  https://example.com/a/very/long/link", "  now"}},
		{"colour codes take no width", "\x1b[1mAPP web\x1b[0m  owner x", 16, 2, []string{"\x1b[1mAPP web\x1b[0m  owner x"}},
		{"width 0 never wraps", strings.Repeat("word ", 40), 0, 2, []string{strings.Repeat("word ", 40)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := wrap(tt.line, tt.width, tt.hang)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("wrap = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFitValuesSharesTheRoom(t *testing.T) {
	tests := []struct {
		name, git, live string
		room            int
		want            string
	}{
		{"both fit", "2", "5", 20, "2 → 5"},
		{"the short one gives its room to the long one", "<none>", `{"image":"docker.io/istio/proxyv2:1.24.0"}`, 30, `<none> → {"imag…oxyv2:1.24.0"}`},
		{"two long ones get half each", "ghcr.io/acme/web:1.4.2", "ghcr.io/acme/web:1.4.3-hotfix", 33, "ghcr…/web:1.4.2 → ghcr…4.3-hotfix"},
		{"no room limit", "a", "b", 0, "a → b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fitValues(tt.git, tt.live, tt.room)
			if got != tt.want {
				t.Errorf("fitValues = %q, want %q", got, tt.want)
			}
			if tt.room > 0 && textWidth(got) > tt.room {
				t.Errorf("fitValues is %d wide, room %d", textWidth(got), tt.room)
			}
		})
	}
}

func TestWidthForPrefersColumns(t *testing.T) {
	env := func(kv ...string) func(string) (string, bool) {
		return func(k string) (string, bool) {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1], true
				}
			}
			return "", false
		}
	}
	size := func(w int, err error) func() (int, error) { return func() (int, error) { return w, err } }
	tests := []struct {
		name string
		size func() (int, error)
		env  func(string) (string, bool)
		want int
	}{
		{"the terminal's width", size(110, nil), env(), 110},
		{"COLUMNS overrides the terminal", size(110, nil), env("COLUMNS", "80"), 80},
		{"a COLUMNS that is no number is ignored", size(110, nil), env("COLUMNS", "wide"), 110},
		{"a COLUMNS of 0 is ignored", size(110, nil), env("COLUMNS", "0"), 110},
		{"a terminal that reports no size: no limit", size(0, errors.New("inappropriate ioctl")), env(), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := widthFor(tt.size, tt.env); got != tt.want {
				t.Errorf("widthFor = %d, want %d", got, tt.want)
			}
		})
	}
}
