package source

import (
	"context"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/gitrepo"
)

// gitTestRepo is a bare repository with two commits on main: v1 (tagged
// v1.0.0, annotated) and v2.
type gitTestRepo struct {
	dir        string
	v1, v2     string
	v1Files    map[string]string
	mainFiles  map[string]string
	deployFile string
}

// newGitTestRepo is the repository the Git tests share.
func newGitTestRepo(t *testing.T) gitTestRepo {
	t.Helper()
	r := gitTestRepo{
		deployFile: "apps/web/deploy.yaml",
		v1Files: map[string]string{
			"apps/web/deploy.yaml": "replicas: 1\n",
			"README.md":            "v1\n",
		},
		mainFiles: map[string]string{
			"apps/web/deploy.yaml": "replicas: 2\n",
			"apps/api/deploy.yaml": "api\n",
			"README.md":            "v1\n",
		},
	}
	dir, shas := bareRepo(t, "v1.0.0", r.v1Files, map[string]string{"apps/web/deploy.yaml": "replicas: 2\n", "apps/api/deploy.yaml": "api\n"})
	r.dir, r.v1, r.v2 = dir, shas[0], shas[1]
	return r
}

// bareRepo is gitrepo.Bare, the repository helper every package's tests share.
func bareRepo(t *testing.T, tag string, commits ...map[string]string) (dir string, shas []string) {
	t.Helper()
	return gitrepo.Bare(t, tag, commits...)
}

func TestFetchGit(t *testing.T) {
	repo := newGitTestRepo(t)
	cacheDir := NewCache(t.TempDir())
	tests := []struct {
		name       string
		repo       string
		revision   string
		depth      int
		wantCommit string
		wantFiles  map[string]string
	}{
		{"a tag is its commit, not the branch's newer one", repo.dir, "v1.0.0", 0, repo.v1, repo.v1Files},
		{"a branch is its newest commit", repo.dir, "main", 0, repo.v2, repo.mainFiles},
		{"no revision is the remote HEAD", repo.dir, "", 0, repo.v2, repo.mainFiles},
		{"a full ref names a tag too", "file://" + repo.dir, "refs/tags/v1.0.0", 0, repo.v1, repo.v1Files},
		{"a commit SHA behind the branch's tip", repo.dir, repo.v1, 0, repo.v1, repo.v1Files},
		{"a short commit SHA", repo.dir, repo.v1[:8], 0, repo.v1, repo.v1Files},
		{"a branch with all history", repo.dir, "main", -1, repo.v2, repo.mainFiles},
		{"the tag again, from the cache", "file://" + repo.dir, "v1.0.0", 0, repo.v1, repo.v1Files},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FetchGit(context.Background(), GitOptions{Repo: tt.repo, Revision: tt.revision, Cache: cacheDir, Depth: tt.depth})
			if err != nil {
				t.Fatalf("FetchGit: %v", err)
			}
			if got.Commit != tt.wantCommit {
				t.Errorf("Commit = %s, want %s", got.Commit, tt.wantCommit)
			}
			if want := filepath.Join(cacheDir.Dir, filepath.Base(filepath.Dir(got.Dir)), tt.wantCommit); got.Dir != want {
				t.Errorf("Dir = %s, want %s", got.Dir, want)
			}
			if diff := cmp.Diff(tt.wantFiles, treeFiles(t, got.Dir)); diff != "" {
				t.Errorf("files (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFetchGitSharesOneCachePerRepository(t *testing.T) {
	repo := newGitTestRepo(t)
	cacheDir := NewCache(t.TempDir())
	var wg sync.WaitGroup
	dirs := make([]string, 4)
	errs := make([]error, 4)
	for i, rev := range []string{"v1.0.0", "main", "v1.0.0", "main"} {
		wg.Go(func() {
			co, err := FetchGit(context.Background(), GitOptions{Repo: repo.dir, Revision: rev, Cache: cacheDir})
			dirs[i], errs[i] = co.Dir, err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("FetchGit: %v", err)
	}
	if dirs[0] != dirs[2] || dirs[1] != dirs[3] || dirs[0] == dirs[1] {
		t.Errorf("Dirs = %v, want one per commit", dirs)
	}
	entries, err := os.ReadDir(cacheDir.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("cache holds %d folders, want 1 for the one repository", len(entries))
	}
	if diff := cmp.Diff(repo.v1Files, treeFiles(t, dirs[0])); diff != "" {
		t.Errorf("v1.0.0 files after a concurrent fetch of main (-want +got):\n%s", diff)
	}
}

func TestFetchGitErrors(t *testing.T) {
	repo := newGitTestRepo(t)
	const token = "ghp_s3cr3tT0kenValue1234567890"
	var mu sync.Mutex
	var seenUser, seenPassword string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, _ := r.BasicAuth()
		mu.Lock()
		seenUser, seenPassword = user, pass
		mu.Unlock()
		// A server that echoes the credentials it was sent.
		http.Error(w, "no access for "+user+":"+pass+" to "+r.URL.String(), http.StatusInternalServerError)
	}))
	defer srv.Close()
	withUserinfo := strings.Replace(srv.URL, "https://", "https://deploy:"+token+"@", 1)
	withAt := strings.Replace(srv.URL, "https://", "https://deploy:p@ss"+token+"@", 1)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})

	tests := []struct {
		name     string
		opts     GitOptions
		wantText []string
		wantIs   error
	}{{
		name:     "a revision that does not exist names it",
		opts:     GitOptions{Repo: repo.dir, Revision: "release-9"},
		wantText: []string{"git " + repo.dir + "@release-9: revision not found", `"release-9"`},
		wantIs:   ErrRevisionNotFound,
	}, {
		name:     "a commit SHA that does not exist names it",
		opts:     GitOptions{Repo: repo.dir, Revision: "0123456789abcdef0123456789abcdef01234567"},
		wantText: []string{"@0123456789abcdef0123456789abcdef01234567: revision not found"},
		wantIs:   ErrRevisionNotFound,
	}, {
		name:     "a repository that does not exist",
		opts:     GitOptions{Repo: "file:///nonexistent/driftscan.git", Revision: "main"},
		wantText: []string{"git file:///nonexistent/driftscan.git@main: "},
	}, {
		name:     "a token in the URL is never printed",
		opts:     GitOptions{Repo: withUserinfo + "/apps.git", Revision: "main", CABundle: ca},
		wantText: []string{"git " + srv.URL + "/apps.git@main: "},
	}, {
		name:     "a password holding @ is never printed, not even its tail",
		opts:     GitOptions{Repo: withAt + "/apps.git", Revision: "main", CABundle: ca},
		wantText: []string{"git " + srv.URL + "/apps.git@main: "},
	}, {
		name: "a token from the environment is never printed",
		opts: GitOptions{Repo: srv.URL + "/apps.git", CABundle: ca, Auth: config.GitAuth{TokenEnv: "GIT_TOKEN"}, Getenv: func(k string) string {
			if k == "GIT_TOKEN" {
				return token
			}
			return ""
		}},
		wantText: []string{"git " + srv.URL + "/apps.git@HEAD: "},
	}, {
		name:     "an empty token variable is named, not guessed around",
		opts:     GitOptions{Repo: srv.URL + "/apps.git", CABundle: ca, Auth: config.GitAuth{TokenEnv: "GIT_TOKEN"}, Getenv: func(string) string { return "" }},
		wantText: []string{"auth: tokenEnv: environment variable GIT_TOKEN is empty"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Cache = NewCache(t.TempDir())
			co, err := FetchGit(context.Background(), tt.opts)
			if err == nil {
				t.Fatalf("FetchGit() = %+v, want an error", co)
			}
			for _, w := range tt.wantText {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("FetchGit() error = %q, want it to contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), token) {
				t.Errorf("FetchGit() error = %q, holds the token", err)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("errors.Is(%q, %v) = false, want true", err, tt.wantIs)
			}
		})
	}

	// The env token went out as basic auth with the default user.
	mu.Lock()
	defer mu.Unlock()
	if seenUser != "git" || seenPassword != token {
		t.Errorf("server saw basic auth %q:%q, want git and the token", seenUser, seenPassword)
	}
}
