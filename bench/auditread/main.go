// Command auditread measures how fast package audit reads an audit log, and
// writes synthetic logs of any size to measure it on:
//
//	auditread -generate 1024 -out audit.log   # about 1 GiB of API server events
//	auditread -read audit.log                 # events/s, kept, matched
//
// The generated log is what a busy cluster's API server writes with a
// policy like docs/audit.md's: mostly reads and RequestReceived stages, and
// writes with their bodies (Request level), spread over many objects of
// which -objects are the ones "scanned". Run -read in a child process with
// bounded memory (ulimit -v) and take its peak RSS from bench/rusage.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/calricon/driftscan/audit"
)

func main() {
	gen := flag.Int("generate", 0, "write about this many MiB of synthetic audit events to -out")
	out := flag.String("out", "audit.log", "where -generate writes")
	read := flag.String("read", "", "read this audit log (a file or folder) and print what it cost")
	objects := flag.Int("objects", 5000, "how many of the generated Deployments count as scanned")
	flag.Parse()
	var err error
	switch {
	case *gen > 0:
		err = generate(*out, int64(*gen)<<20, *objects)
	case *read != "":
		err = measure(*read, *objects)
	default:
		err = fmt.Errorf("give -generate MIB or -read FILE")
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "auditread: %v\n", err)
		os.Exit(1)
	}
}

// The generated cluster: namespaces of Deployments, 4 times as many as are
// scanned, and the people and controllers that touch them.
const namespaces = 50

func objectName(i int) (ns, name string) {
	return fmt.Sprintf("team-%02d", i%namespaces), fmt.Sprintf("app-%05d", i)
}

var agents = []struct{ user, agent, manager string }{
	{"system:serviceaccount:argocd:argocd-application-controller", "argocd-application-controller/v3.5.7 (linux/amd64) kubernetes/$Format", "argocd-controller"},
	{"alice@example.com", "kubectl/v1.32.3 (linux/amd64) kubernetes/32cc146", "kubectl-edit"},
	{"system:serviceaccount:ci:deployer", "kubectl/v1.32.3 (linux/amd64) kubernetes/32cc146", "kubectl-set"},
	{"system:serviceaccount:kube-system:horizontal-pod-autoscaler", "kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/a1b2c3d/system:serviceaccount:kube-system:horizontal-pod-autoscaler", ""},
	{"system:kube-controller-manager", "kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/a1b2c3d/deployment-controller", ""},
	{"system:node:node-17", "kubelet/v1.37.2 (linux/amd64) kubernetes/a1b2c3d", ""},
}

func generate(path string, size int64, scanned int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	r := rand.New(rand.NewPCG(1, 2))
	t := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	body := strings.Repeat("x", 1500) // a Deployment's worth of request body
	var written int64
	for n := 0; written < size; n++ {
		t = t.Add(time.Duration(r.IntN(4000)) * time.Microsecond)
		i := r.IntN(4 * scanned)
		ns, name := objectName(i)
		a := agents[r.IntN(len(agents))]
		id := fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", r.Uint32(), r.IntN(1<<16), r.IntN(1<<12), r.IntN(1<<12), r.Uint64()&(1<<48-1))
		ev := map[string]any{"kind": "Event", "apiVersion": "audit.k8s.io/v1"}
		verb, stage, level := "get", "ResponseComplete", "Metadata"
		switch p := r.IntN(100); {
		case p < 30:
			verb = "get"
		case p < 45:
			verb = "list"
		case p < 55:
			verb = "watch"
		case p < 80:
			verb, stage = "patch", "RequestReceived"
		default:
			verb, level = []string{"patch", "update", "create"}[r.IntN(3)], "Request"
		}
		uri := fmt.Sprintf("/apis/apps/v1/namespaces/%s/deployments/%s", ns, name)
		if a.manager != "" && verb != "get" && verb != "list" && verb != "watch" {
			uri += "?fieldManager=" + a.manager
		}
		ev["level"], ev["auditID"], ev["stage"], ev["requestURI"], ev["verb"] = level, id, stage, uri, verb
		ev["user"] = map[string]any{"username": a.user, "groups": []string{"system:authenticated"}}
		ev["sourceIPs"], ev["userAgent"] = []string{"10.0.4.17"}, a.agent
		ev["objectRef"] = map[string]any{"resource": "deployments", "namespace": ns, "name": name, "apiGroup": "apps", "apiVersion": "v1"}
		if stage == "ResponseComplete" {
			ev["responseStatus"] = map[string]any{"metadata": map[string]any{}, "code": 200}
		}
		if level == "Request" {
			ev["requestObject"] = map[string]any{"metadata": map[string]any{"annotations": map[string]any{"note": body}},
				"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": fmt.Sprintf("nginx:1.%d", n%40)}}}}}}
		}
		ev["requestReceivedTimestamp"] = t.Format("2006-01-02T15:04:05.000000Z")
		ev["stageTimestamp"] = t.Add(3 * time.Millisecond).Format("2006-01-02T15:04:05.000000Z")
		ev["annotations"] = map[string]any{"authorization.k8s.io/decision": "allow", "authorization.k8s.io/reason": "RBAC: allowed by ClusterRoleBinding"}
		line, err := marshalOrdered(ev)
		if err != nil {
			return err
		}
		k, err := w.Write(append(line, '\n'))
		if err != nil {
			return err
		}
		written += int64(k)
	}
	return w.Flush()
}

// order is the field order of the API server's log backend.
var order = []string{"kind", "apiVersion", "level", "auditID", "stage", "requestURI", "verb", "user", "sourceIPs", "userAgent",
	"objectRef", "responseStatus", "requestObject", "requestReceivedTimestamp", "stageTimestamp", "annotations"}

func marshalOrdered(ev map[string]any) ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	first := true
	for _, k := range order {
		v, ok := ev[k]
		if !ok {
			continue
		}
		data, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		fmt.Fprintf(&b, "%q:%s", k, data)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

func measure(path string, scanned int) error {
	keep := map[audit.ObjectRef]bool{}
	for i := 0; i < scanned; i++ {
		ns, name := objectName(i)
		keep[audit.ObjectRef{Group: "apps", Resource: "deployments", Namespace: ns, Name: name}] = true
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	opts := audit.DefaultOptions()
	opts.Paths = []string{path}
	opts.Keep = func(o audit.ObjectRef) bool { return keep[o] }
	start := time.Now()
	ix := audit.Read(context.Background(), opts)
	secs := time.Since(start).Seconds()
	st := ix.Stats()
	// CPU time says what reading costs on a machine others share too.
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"bytes": fi.Size(), "seconds": secs, "cpuSeconds": cpu, "read": st.Read, "kept": st.Kept,
		"eventsPerSecond": float64(st.Read) / secs, "eventsPerCPUSecond": float64(st.Read) / cpu,
		"mibPerSecond": float64(fi.Size()) / (1 << 20) / secs, "warnings": ix.Warnings(),
	})
}
