// Command listfloor is the floor a scan's reads cannot go below: it sends
// the LIST requests a driftscan scan sends (the same resources, namespaces
// and page size, following continue tokens), reads every page to its end
// and throws it away. Whatever driftscan takes beyond this is its own work:
// rendering, decoding, comparing, writing the report.
//
//	listfloor -kubeconfig K -lists LISTS.json [-concurrency 4] > RESULT.json
//
// LISTS.json is a JSON array of {"path": "/apis/apps/v1/deployments",
// "limit": 500}: the first page of each LIST the scan sent, as the
// benchmark recorded them. The result on stdout counts the pages and bytes
// read. Nothing of a page is decoded but its continue token.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// List is one LIST to send, from its first page.
type List struct {
	Path  string `json:"path"`
	Limit int64  `json:"limit"`
}

// Result is what listfloor writes to stdout.
type Result struct {
	Lists int   `json:"lists"`
	Pages int64 `json:"pages"`
	Bytes int64 `json:"bytes"`
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster")
	listsFile := flag.String("lists", "", "JSON file of the LISTs to send")
	concurrency := flag.Int("concurrency", 4, "LISTs sent at once (driftscan's scanner sends 4)")
	flag.Parse()
	if err := run(context.Background(), *kubeconfig, *listsFile, *concurrency); err != nil {
		fmt.Fprintf(os.Stderr, "listfloor: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, listsFile string, concurrency int) error {
	data, err := os.ReadFile(listsFile)
	if err != nil {
		return err
	}
	var lists []List
	if err := json.Unmarshal(data, &lists); err != nil {
		return fmt.Errorf("%s: %w", listsFile, err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	var (
		pages, bytes atomic.Int64
		wg           sync.WaitGroup
		mu           sync.Mutex
		errs         []error
		sem          = make(chan struct{}, max(1, concurrency))
	)
	for _, l := range lists {
		wg.Add(1)
		sem <- struct{}{}
		go func(l List) {
			defer func() { <-sem; wg.Done() }()
			n, b, err := listAll(ctx, client, cfg.Host, l)
			pages.Add(n)
			bytes.Add(b)
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("list %s: %w", l.Path, err))
				mu.Unlock()
			}
		}(l)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(Result{Lists: len(lists), Pages: pages.Load(), Bytes: bytes.Load()})
}

// listAll reads every page of one LIST and returns how many pages and
// bytes it read.
func listAll(ctx context.Context, client *http.Client, host string, l List) (pages, bytes int64, err error) {
	cont := ""
	for {
		q := url.Values{}
		if l.Limit > 0 {
			q.Set("limit", strconv.FormatInt(l.Limit, 10))
		}
		if cont != "" {
			q.Set("continue", cont)
		}
		u := host + l.Path + "?" + q.Encode()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return pages, bytes, err
		}
		req.Header.Set("Accept", "application/json") // what the dynamic client asks for
		resp, err := client.Do(req)
		if err != nil {
			return pages, bytes, err
		}
		n, c, err := readPage(resp)
		pages, bytes = pages+1, bytes+n
		if err != nil {
			return pages, bytes, err
		}
		if c == "" {
			return pages, bytes, nil
		}
		cont = c
	}
}

// readPage reads a page to its end and returns its size and continue token.
func readPage(resp *http.Response) (int64, string, error) {
	defer resp.Body.Close()
	cr := &countingReader{r: resp.Body}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(cr, 1024))
		return cr.n, "", fmt.Errorf("%s: %s", resp.Status, msg)
	}
	// Only metadata.continue is decoded; every item is skipped over.
	var page struct {
		Metadata struct {
			Continue string `json:"continue"`
		} `json:"metadata"`
	}
	if err := json.NewDecoder(cr).Decode(&page); err != nil {
		return cr.n, "", err
	}
	_, err := io.Copy(io.Discard, cr)
	return cr.n, page.Metadata.Continue, err
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
