package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ServerCost is what one tool's run cost the control plane: the CPU time
// kube-apiserver and etcd spent (user + system, from /proc/PID/stat) and
// the bytes each wrote (wchar of /proc/PID/io: every write to a socket or
// file, so for kube-apiserver mostly the responses it sent, encrypted, and
// its requests to etcd; for etcd its replies and its log) during the run.
type ServerCost struct {
	APIServerCPUSeconds float64 `json:"apiServerCpuSeconds"`
	EtcdCPUSeconds      float64 `json:"etcdCpuSeconds"`
	APIServerBytesSent  int64   `json:"apiServerBytesSent"`
	EtcdBytesSent       int64   `json:"etcdBytesSent"`
	// IdleCPUSeconds is what both spent in the same time with nothing
	// asking (their own housekeeping), measured before the runs: already
	// included above, and to be subtracted for the tool's share alone.
	IdleCPUSeconds float64 `json:"idleCpuSeconds"`
}

// CPUSeconds is the control plane's CPU time in all.
func (c ServerCost) CPUSeconds() float64 { return c.APIServerCPUSeconds + c.EtcdCPUSeconds }

// controlPlane finds the kube-apiserver and etcd this benchmark started
// (its children, as envtest starts them) and samples what they used.
type controlPlane struct {
	apiserver, etcd int
	// idlePerSecond is their CPU seconds per wall second at rest.
	idlePerSecond float64
	// settled is how long findControlPlane waited for them to come to
	// rest before the window that measured idlePerSecond.
	settled time.Duration
	// collect has the API server collect its heap (collectHeap); nil
	// when it cannot.
	collect func() error
}

// usage is one sample of a process.
type usage struct {
	cpu   float64 // seconds
	wchar int64
}

// cpSample is one sample of both processes.
type cpSample struct {
	at              time.Time
	apiserver, etcd usage
}

// findControlPlane returns the children of this process named
// kube-apiserver and etcd, and measures their CPU at rest: over windows of
// idle, until one spends at most restRate CPU seconds a second or settle
// has passed (the last window's rate is kept).
//
// Right after a large estate is synced the control plane goes on working
// for minutes with nothing asking: at 100,000 objects it spent 0.45 CPU s
// a second in the 3 s after the sync and 0.05 a few minutes later, and at
// 20,000 0.17. On two cores that work takes from whatever runs beside
// it, the longer the more: a run timed then is not the run timed later.
func findControlPlane(idle, settle time.Duration) (*controlPlane, error) {
	cp := &controlPlane{}
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	me := os.Getpid()
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		comm, ppid, err := statOf(pid)
		if err != nil || ppid != me {
			continue
		}
		switch comm {
		case "kube-apiserver":
			cp.apiserver = pid
		case "etcd":
			cp.etcd = pid
		}
	}
	if cp.apiserver == 0 || cp.etcd == 0 {
		return nil, fmt.Errorf("kube-apiserver (pid %d) or etcd (pid %d) not found among this process's children", cp.apiserver, cp.etcd)
	}
	if cp.idlePerSecond, cp.settled, err = cp.settle(idle, settle); err != nil {
		return nil, err
	}
	return cp, nil
}

// settle samples the control plane over windows of window until one finds
// it spending at most restRate CPU seconds a second, or max has passed,
// and returns that last window's rate and how long it waited before it.
func (cp *controlPlane) settle(window, max time.Duration) (rate float64, waited time.Duration, err error) {
	start := time.Now()
	for {
		before, err := cp.read()
		if err != nil {
			return 0, 0, err
		}
		time.Sleep(window)
		after, err := cp.read()
		if err != nil {
			return 0, 0, err
		}
		rate = after.since(before).CPUSeconds() / after.at.Sub(before.at).Seconds()
		if rate <= restRate || time.Since(start) >= max {
			return rate, time.Since(start) - window, nil
		}
	}
}

// restRate is the control plane's CPU seconds a second at which it is at
// rest: a twentieth of the machine's two cores (a 5,000-object estate's
// rests at 0.02, a 100,000-object one's at about 0.05 once settled).
const restRate = 0.1

// read samples both processes' CPU time and bytes written now.
func (cp *controlPlane) read() (cpSample, error) {
	s := cpSample{at: time.Now()}
	var err error
	if s.apiserver, err = usageOf(cp.apiserver); err != nil {
		return s, err
	}
	s.etcd, err = usageOf(cp.etcd)
	return s, err
}

// since is what was used from before to s.
func (s cpSample) since(before cpSample) ServerCost {
	return ServerCost{
		APIServerCPUSeconds: s.apiserver.cpu - before.apiserver.cpu,
		EtcdCPUSeconds:      s.etcd.cpu - before.etcd.cpu,
		APIServerBytesSent:  s.apiserver.wchar - before.apiserver.wchar,
		EtcdBytesSent:       s.etcd.wchar - before.etcd.wchar,
	}
}

// measure waits for the control plane to be at rest (rest), then runs f
// and returns what the control plane spent meanwhile. A control plane that
// cannot be read gives a zero cost and no error: the cost is a column of
// the table, not a reason to stop.
func (cp *controlPlane) measure(f func() error) (ServerCost, error) {
	if cp == nil {
		return ServerCost{}, f()
	}
	cp.collectHeap()
	cp.rest()
	before, berr := cp.read()
	err := f()
	after, aerr := cp.read()
	if berr != nil || aerr != nil {
		return ServerCost{}, err
	}
	c := after.since(before)
	c.IdleCPUSeconds = cp.idlePerSecond * after.at.Sub(before.at).Seconds()
	return c, err
}

// rest waits until the control plane spends at most restRate CPU seconds
// a second over a window of restSample, or maxRest has passed (settle),
// and says so when it waited. Every timed run, the floor's and kubectl's too, then
// starts beside a control plane doing nothing, as the first did: at
// 100,000 objects its own work came in bursts minutes after the sync
// (etcd's compaction, the collector of a heap holding every object), and
// at 759e3f7 two of the twelve shard runs had the control plane spend 4.6
// and 7.3 CPU s beside a 5 to 6.6 s scan, against 1.0 to 2.2 for the rest,
// on the same two cores.
func (cp *controlPlane) rest() {
	if _, waited, err := cp.settle(restSample, maxRest); err == nil && waited > restSample {
		say("the control plane was busy: waited %.1fs for it to rest before the next run", (waited + restSample).Seconds())
	}
}

// collectHeap has the API server run its collector before a timed run, as
// its profiling handler does when asked for the heap with gc=1. An API
// server holding a 20,000-object estate collects every few sets of
// that estate's LISTs, whoever sends them: which of the two tools' runs it
// fell in was chance, and it doubled the control plane's CPU in that run
// (0.46 -> 1.05 CPU s) and the run's wall time with it. On the served 20k
// estate, 12 shuffled rounds of warm scans and their floor, each after a
// write: without it the floor's median was 0.553 s (its slowest 0.970, the
// control plane's CPU in a run up to 1.35 s) and the scan's 0.807 (1.246);
// with it 0.478 (0.610, at most 0.60) and 0.683 (0.989, at most 0.67).
// Every run, of every tool, starts from a heap just collected; the
// collection a run's own garbage leads to may then come after it rather
// than in it, so a short run's control-plane CPU is what serving its
// requests cost (kubectl diff's runs are long enough to hold their own).
func (cp *controlPlane) collectHeap() {
	if cp.collect == nil {
		return
	}
	if err := cp.collect(); err != nil {
		say("the API server's heap is not collected before each run: %v", err)
		cp.collect = nil
	}
}

// restSample is the window rest measures the control plane's rate over,
// and maxRest how long it waits at most.
const (
	restSample = 300 * time.Millisecond
	maxRest    = 30 * time.Second
)

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on every
// Linux architecture Go runs on (the kernel's ABI, whatever HZ it runs at).
const clockTicks = 100

// statOf returns a process's name and parent from /proc/PID/stat.
func statOf(pid int) (comm string, ppid int, err error) {
	f, err := statFields(pid)
	if err != nil {
		return "", 0, err
	}
	ppid, err = strconv.Atoi(f[2])
	return f[0], ppid, err
}

// statFields returns /proc/PID/stat's fields from comm on, so that field n
// of proc(5) is at index n-2: comm (2, without its parentheses) at 0,
// ppid (4) at 2, utime (14) at 12, stime (15) at 13.
func statFields(pid int) ([]string, error) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil, err
	}
	s := string(data)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return nil, fmt.Errorf("/proc/%d/stat: no comm", pid)
	}
	rest := strings.Fields(s[end+1:])
	if len(rest) < 13 {
		return nil, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(rest))
	}
	return append([]string{s[open+1 : end]}, rest...), nil
}

// usageOf reads one process's CPU time and bytes written.
func usageOf(pid int) (usage, error) {
	f, err := statFields(pid)
	if err != nil {
		return usage{}, err
	}
	utime, err1 := strconv.ParseInt(f[12], 10, 64)
	stime, err2 := strconv.ParseInt(f[13], 10, 64)
	if err1 != nil || err2 != nil {
		return usage{}, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[12], f[13])
	}
	u := usage{cpu: float64(utime+stime) / clockTicks}
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "io"))
	if err != nil {
		return u, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "wchar:"); ok {
			u.wchar, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return u, err
		}
	}
	return u, fmt.Errorf("/proc/%d/io: no wchar", pid)
}
