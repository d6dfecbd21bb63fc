package source

import (
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/calricon/driftscan/fixtures/gitrepo"
	"github.com/calricon/driftscan/render"
)

func TestAGitTreeOverTheSizeLimitIsRefused(t *testing.T) {
	dir, _ := gitrepo.Bare(t, "", map[string]string{"apps/web/big.yaml": "# " + strings.Repeat("x", 2<<20) + "\n"})
	_, err := FetchGit(t.Context(), GitOptions{Repo: "file://" + dir, Cache: NewCache(t.TempDir()), MaxBytes: 1 << 20})
	if err == nil || !strings.Contains(err.Error(), "--git-max-size") {
		t.Fatalf("err = %v, want the size limit named", err)
	}
	if _, err := FetchGit(t.Context(), GitOptions{Repo: "file://" + dir, Cache: NewCache(t.TempDir()), MaxBytes: 4 << 20}); err != nil {
		t.Fatalf("under the limit: %v", err)
	}
}

// cutter serves a bare repository over Git's smart HTTP protocol (git
// http-backend on loopback) and, while cut is set, drops the connection half
// way through the pack it sends.
type cutter struct {
	backend http.Handler
	cut     atomic.Bool
}

func (c *cutter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !c.cut.Load() || !strings.HasSuffix(r.URL.Path, "/git-upload-pack") {
		c.backend.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	c.backend.ServeHTTP(rec, r)
	body := rec.Body.Bytes()
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	// Promise the whole pack, send half of it, hang up.
	_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/x-git-upload-pack-result\r\n")
	_, _ = buf.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n")
	_, _ = buf.Write(body[:len(body)/2])
	_ = buf.Flush()
}

func TestACloneCutOffMidwayFailsCleanlyAndTheNextFetchWorks(t *testing.T) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("git is needed for git http-backend: %v", err)
	}
	files := gitrepo.Files(t, filepath.Join("..", "fixtures", "apps", "web"))
	for i := 0; i < 50; i++ { // enough content that half a pack is not a pack
		files[filepath.ToSlash(filepath.Join("filler", strconv.Itoa(i)+".txt"))] = strings.Repeat(strconv.Itoa(i*7919), 2000)
	}
	dir, shas := gitrepo.Bare(t, "", files)
	c := &cutter{backend: &cgi.Handler{
		Path: gitPath,
		Args: []string{"http-backend"},
		Env:  []string{"GIT_PROJECT_ROOT=" + filepath.Dir(dir), "GIT_HTTP_EXPORT_ALL=1"},
	}}
	srv := httptest.NewServer(c)
	defer srv.Close()
	url := srv.URL + "/" + filepath.Base(dir)
	cache := NewCache(t.TempDir())

	c.cut.Store(true)
	_, err = FetchGit(t.Context(), GitOptions{Repo: url, Cache: cache})
	if err == nil {
		t.Fatal("a clone cut off mid-way succeeded")
	}
	if !strings.Contains(err.Error(), "git "+url) {
		t.Errorf("error %q does not name the repository", err)
	}

	c.cut.Store(false)
	co, err := FetchGit(t.Context(), GitOptions{Repo: url, Cache: cache})
	if err != nil {
		t.Fatalf("the fetch after the cut: %v", err)
	}
	if co.Commit != shas[0] {
		t.Errorf("commit %s, want %s", co.Commit, shas[0])
	}
	ms, err := render.Manifests(t.Context(), render.Options{Dir: co.Dir})
	if err != nil || len(ms) == 0 {
		t.Errorf("the checkout after the cut does not render: %v", err)
	}
}
