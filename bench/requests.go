package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/scanner"
)

// Requests is the request log of one driftscan scan, run in process so that
// every request can be seen (the binary only reports the total).
type Requests struct {
	Total int `json:"total"`
	// Discovery counts /api, /apis, /version and /openapi requests.
	Discovery int `json:"discovery"`
	// Lists are the LISTs, one row per resource and namespace ("" for
	// cluster-wide), with the pages each took.
	Lists []ListRequest `json:"lists"`
	// MaxListsPerKey is the most LISTs (first pages) sent for any one
	// resource and namespace; the target is 1.
	MaxListsPerKey int `json:"maxListsPerKey"`
	// ObjectRequests count requests that name one object, write or watch:
	// the target is 0.
	ObjectRequests int `json:"objectRequests"`
	// Other lists requests that fit none of the above.
	Other []string `json:"other,omitempty"`
	// WallSeconds is the in-process scan's wall time (with the CPU profiler
	// on when one was asked for).
	WallSeconds float64 `json:"wallSeconds"`
	// firstPages are the LISTs by their first page, for the floor.
	firstPages []floorList
	// Stages is how long each stage of that scan took, from its progress
	// reports: connect (until the first report), render, list (the LISTs,
	// then the OpenAPI schemas, webhooks, namespaces and autoscalers the
	// compare needs), compare (and the report).
	Stages []Stage `json:"stages"`
}

// Stage is one stage of a scan and its wall time.
type Stage struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
}

// ListRequest is the LISTs of one resource in one namespace.
type ListRequest struct {
	Resource  string `json:"resource"`
	Namespace string `json:"namespace"`
	Lists     int    `json:"lists"`
	Pages     int    `json:"pages"`
}

// recorder is a RoundTripper that logs each request's method and URL.
type recorder struct {
	next http.RoundTripper
	mu   *sync.Mutex
	log  *[]*http.Request
}

func (r recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	*r.log = append(*r.log, req)
	r.mu.Unlock()
	return r.next.RoundTrip(req)
}

// profileScans is how many scans a CPU profile covers: one 5,000-object
// scan gives only a couple of hundred samples.
const profileScans = 5

// scanInProcess scans the bed's estate with the scanner package, with the
// CLI's default rate limits, and records every request and how long each
// stage took. When cpuprofile is set it then scans profileScans more times
// under the CPU profiler and writes the profile there.
func scanInProcess(ctx context.Context, b *bed, cpuprofile string) (Requests, error) {
	cfg, err := config.Load(b.est.Config)
	if err != nil {
		return Requests{}, err
	}
	var mu sync.Mutex
	var log []*http.Request
	rc := rest.CopyConfig(b.env.Config)
	rc.QPS, rc.Burst = 20, 40 // driftscan scan's --qps and --burst defaults
	rc.Wrap(func(next http.RoundTripper) http.RoundTripper { return recorder{next: next, mu: &mu, log: &log} })
	opts := scanner.DefaultOptions()
	opts.RESTConfig = rc
	opts.GitCacheDir = b.est.Dir
	var stages []Stage
	var last time.Time
	current := "connect"
	opts.Progress = func(p scanner.Progress) {
		if p.Stage == current {
			return
		}
		now := time.Now()
		stages = append(stages, Stage{Name: current, Seconds: now.Sub(last).Seconds()})
		current, last = p.Stage, now
	}

	start := time.Now()
	last = start
	wall, err := scanOnce(ctx, cfg, opts)
	if err != nil {
		return Requests{}, err
	}
	stages = append(stages, Stage{Name: current + " and report", Seconds: time.Since(last).Seconds()})
	out := classifyRequests(log)
	out.WallSeconds, out.Stages = wall.Seconds(), stages

	if cpuprofile != "" {
		opts.Progress = nil
		f, err := os.Create(cpuprofile)
		if err != nil {
			return out, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return out, err
		}
		defer pprof.StopCPUProfile()
		for i := 0; i < profileScans; i++ {
			if _, err := scanOnce(ctx, cfg, opts); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// scanOnce scans and fails on any error the report holds.
func scanOnce(ctx context.Context, cfg *config.Config, opts scanner.Options) (time.Duration, error) {
	start := time.Now()
	r, err := scanner.Scan(ctx, cfg, opts)
	if err != nil {
		return 0, fmt.Errorf("scan in process: %w", err)
	}
	if r.Summary.Errors > 0 {
		return 0, fmt.Errorf("scan in process reported %d errors: %s", r.Summary.Errors, firstErrors(r))
	}
	return time.Since(start), nil
}

// classifyRequests sorts a request log into discovery, LISTs by resource and
// namespace, and requests that name one object.
func classifyRequests(log []*http.Request) Requests {
	out := Requests{Total: len(log)}
	lists := map[[2]string]*ListRequest{}
	for _, req := range log {
		p := req.URL.Path
		if p == "/api" || p == "/apis" || p == "/version" || strings.HasPrefix(p, "/openapi/") {
			out.Discovery++
			continue
		}
		var rest []string
		switch segs := strings.Split(strings.Trim(p, "/"), "/"); {
		case len(segs) >= 2 && segs[0] == "api":
			rest = segs[2:]
		case len(segs) >= 3 && segs[0] == "apis":
			rest = segs[3:]
		}
		if len(rest) == 0 {
			if req.Method == http.MethodGet {
				out.Discovery++ // a group's or version's resource list
			} else {
				out.Other = append(out.Other, req.Method+" "+p)
			}
			continue
		}
		ns, resource, name := "", rest[0], ""
		switch {
		case len(rest) >= 3 && rest[0] == "namespaces":
			ns, resource = rest[1], rest[2]
			if len(rest) > 3 {
				name = rest[3]
			}
		case len(rest) >= 2:
			name = rest[1]
		}
		if req.Method != http.MethodGet || name != "" || req.URL.Query().Get("watch") == "true" {
			out.ObjectRequests++
			out.Other = append(out.Other, req.Method+" "+p)
			continue
		}
		k := [2]string{resource, ns}
		l := lists[k]
		if l == nil {
			l = &ListRequest{Resource: resource, Namespace: ns}
			lists[k] = l
		}
		l.Pages++
		if req.URL.Query().Get("continue") == "" {
			l.Lists++
			limit, _ := strconv.ParseInt(req.URL.Query().Get("limit"), 10, 64)
			out.firstPages = append(out.firstPages, floorList{Path: p, Limit: limit})
		}
	}
	for _, l := range lists {
		out.Lists = append(out.Lists, *l)
		out.MaxListsPerKey = max(out.MaxListsPerKey, l.Lists)
	}
	sort.Slice(out.Lists, func(i, j int) bool {
		if out.Lists[i].Resource != out.Lists[j].Resource {
			return out.Lists[i].Resource < out.Lists[j].Resource
		}
		return out.Lists[i].Namespace < out.Lists[j].Namespace
	})
	return out
}
