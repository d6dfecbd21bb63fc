package source

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/calricon/driftscan/fixtures/gitrepo"
)

// fetched sums what a Server sent: requests and response bytes.
func fetched(reqs []gitrepo.Request) (n int, bytes int64) {
	for _, r := range reqs {
		bytes += r.Bytes
	}
	return len(reqs), bytes
}

// TestACommitSHAIsFetchedShallow: a Flux artifact's revision
// (main@sha1:<sha>) or an Argo CD revision pinned to a commit reaches
// FetchGit as a SHA, which fetched the repository's whole history on every
// run with a fresh cache. A SHA that a branch or tag points at is now
// fetched as that ref, one commit deep, and checked; one that no ref points
// at still needs, and gets, all history.
func TestACommitSHAIsFetchedShallow(t *testing.T) {
	// 40 commits, each replacing 20 KB that do not compress: history is 40
	// times the tree.
	var commits []map[string]string
	for i := range 40 {
		commits = append(commits, map[string]string{
			"apps/web/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {v: \"" + fmt.Sprint(i) + "\"}\n",
			"apps/web/big.txt": noise(i, 20000),
		})
	}
	dir, shas := gitrepo.Bare(t, "v1", commits...)
	srv := gitrepo.Serve(t, dir, false)
	url := srv.RepoURL(dir)
	head, first := shas[len(shas)-1], shas[0]

	fetch := func(rev string) (commit string, requests int, bytes int64) {
		t.Helper()
		srv.Requests()
		co, err := FetchGit(t.Context(), GitOptions{Repo: url, Revision: rev, Cache: NewCache(t.TempDir())})
		if err != nil {
			t.Fatalf("revision %s: %v", rev, err)
		}
		requests, bytes = fetched(srv.Requests())
		return co.Commit, requests, bytes
	}

	_, branchReqs, branchBytes := fetch("main")
	t.Logf("branch main at depth 1: %d requests, %d bytes", branchReqs, branchBytes)

	for _, c := range []struct{ name, rev, want string }{
		{"the head of main", head, head},
		{"the head of main, a short SHA", head[:12], head},
		{"the commit tag v1 points at", first, first},
	} {
		t.Run(c.name, func(t *testing.T) {
			commit, reqs, bytes := fetch(c.rev)
			t.Logf("%d requests, %d bytes", reqs, bytes)
			if commit != c.want {
				t.Errorf("commit %s, want %s", commit, c.want)
			}
			if bytes > branchBytes*3/2 || reqs > branchReqs {
				t.Errorf("fetched %d bytes in %d requests, want about one commit's (%d bytes, %d requests): the whole history was fetched", bytes, reqs, branchBytes, branchReqs)
			}
		})
	}

	t.Run("a commit no ref points at fetches all history", func(t *testing.T) {
		commit, reqs, bytes := fetch(shas[20])
		t.Logf("%d requests, %d bytes", reqs, bytes)
		if commit != shas[20] {
			t.Errorf("commit %s, want %s", commit, shas[20])
		}
	})
}

// noise is n bytes of hex that differ for each seed and do not compress.
func noise(seed, n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		sum := sha256.Sum256([]byte(fmt.Sprint(seed, i)))
		b.WriteString(hex.EncodeToString(sum[:]))
	}
	return b.String()[:n]
}
