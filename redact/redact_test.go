package redact

import "testing"

func TestURL(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"a user and password are cut", "https://bob:hunter2@git.example.com/x.git", "https://git.example.com/x.git"},
		{"a password holding @ goes whole, not just up to its first @", "https://deploy:p@ss@w0rd@git.example.com/org/x.git", "https://git.example.com/org/x.git"},
		{"a token as the user is cut", "https://ghp_abc@github.com/org/repo", "https://github.com/org/repo"},
		{"an unescaped / in a password does not leak its tail", "https://u:pa/ss@git.example.com/x.git", "https://git.example.com/x.git"},
		{"token-bearing query values are redacted", "https://git.example.com/x.git?private_token=glpat-123&ref=main", "https://git.example.com/x.git?private_token=redacted&ref=redacted"},
		{"a fragment is redacted", "https://git.example.com/x.git#access_token=abc", "https://git.example.com/x.git#redacted"},
		{"ssh:// loses its user too", "ssh://git@github.com/org/repo.git", "ssh://github.com/org/repo.git"},
		{"scp-like addresses keep their user", "git@github.com:org/repo.git", "git@github.com:org/repo.git"},
		{"a URL without credentials is unchanged", "https://github.com/org/repo.git", "https://github.com/org/repo.git"},
		{"a path with @ keeps it", "https://github.com/org/repo@v1", "https://github.com/org/repo@v1"},
		{"a local path is unchanged", "/srv/git/x.git", "/srv/git/x.git"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := URL(tt.in); got != tt.want {
				t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestText(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		secrets []string
		want    string
	}{
		{"URLs in an error lose their credentials", `Get "https://bob:p@ss@git.example.com/x.git/info/refs?service=git-upload-pack": EOF`, nil, `Get "https://git.example.com/x.git/info/refs?service=redacted": EOF`},
		{"secrets are masked anywhere, escaped or not", "denied for hunter2 (hunter%232)", []string{"hunter#2", "hunter2"}, "denied for *** (***)"},
		{"two URLs in one text", "from https://a:b@x.example/r to https://c:d@y.example/s", nil, "from https://x.example/r to https://y.example/s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Text(tt.in, tt.secrets...); got != tt.want {
				t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
