package report

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A headless Chromium driven through its DevTools protocol over a pipe
// (--remote-debugging-pipe: the browser reads commands from its fd 3 and
// writes answers and events to its fd 4, each a JSON message ended by a NUL
// byte; https://chromedevtools.github.io/devtools-protocol/). A pipe needs
// no port, no websocket and no client library: the standard library is
// enough for the few commands the test sends.

// requireBrowserEnv, set to 1 by `make test`, makes a browser that cannot
// start a failure rather than a skip; DRIFTSCAN_REQUIRE_CLUSTER=1 does too.
const requireBrowserEnv = "DRIFTSCAN_REQUIRE_BROWSER"

// chromiumPath is Debian's chromium, which `make browser` installs;
// DRIFTSCAN_CHROMIUM names another.
func chromiumPath() string {
	if p := os.Getenv("DRIFTSCAN_CHROMIUM"); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

// browser is one headless Chromium and the page the test drives.
type browser struct {
	t        *testing.T
	cmd      *exec.Cmd
	toChrome *os.File
	msgs     chan cdpMessage
	stderr   *lockedBuffer
	nextID   int
	session  string
	// events seen while waiting for answers, by method.
	events []cdpMessage
}

type cdpMessage struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startBrowser starts Chromium with one page of width×height CSS pixels,
// or fails the test (under make test) or skips it (elsewhere) when it
// cannot.
func startBrowser(t *testing.T, width, height int) *browser {
	t.Helper()
	b, err := launch(t, width, height)
	if err != nil {
		if os.Getenv(requireBrowserEnv) == "1" || os.Getenv("DRIFTSCAN_REQUIRE_CLUSTER") == "1" {
			t.Fatalf("headless Chromium did not start (%s): %v\nRun `make browser` to install Debian's chromium.", chromiumPath(), err)
		}
		t.Skipf("no browser (set %s=1 to fail instead): %v", requireBrowserEnv, err)
	}
	return b
}

func launch(t *testing.T, width, height int) (*browser, error) {
	path := chromiumPath()
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	cmdR, cmdW, err := os.Pipe() // commands: we write, Chromium reads fd 3
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe() // answers: Chromium writes fd 4, we read
	if err != nil {
		return nil, err
	}
	// The flags of go.md: no sandbox (the tests run as root), and nothing
	// that reaches the network on its own.
	cmd := exec.Command(path, "--headless", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
		"--disable-quic", "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--disable-extensions", "--mute-audio",
		"--hide-scrollbars", "--user-data-dir="+t.TempDir(), "about:blank")
	cmd.ExtraFiles = []*os.File{cmdR, outW}
	stderr := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = stderr, stderr
	// Its own process group, so that the renderers go with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	cmdR.Close()
	outW.Close()
	b := &browser{t: t, cmd: cmd, toChrome: cmdW, msgs: make(chan cdpMessage, 256), stderr: stderr}
	go b.read(outR)
	t.Cleanup(b.close)

	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := b.call("Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		return nil, fmt.Errorf("%w; chromium said:\n%s", err, stderr.String())
	}
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.call("Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached); err != nil {
		return nil, err
	}
	b.session = attached.SessionID
	for _, domain := range []string{"Page.enable", "Runtime.enable", "Log.enable"} {
		if err := b.call(domain, nil, nil); err != nil {
			return nil, err
		}
	}
	if err := b.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}, nil); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *browser) read(r *os.File) {
	defer close(b.msgs)
	br := bufio.NewReader(r)
	for {
		raw, err := br.ReadBytes(0)
		if err != nil {
			return
		}
		var m cdpMessage
		if json.Unmarshal(raw[:len(raw)-1], &m) == nil {
			b.msgs <- m
		}
	}
}

// cdpTimeout bounds each command; a page this small needs milliseconds.
const cdpTimeout = 60 * time.Second

// call sends a command to the page's session (the browser before there is
// one) and decodes its result into result.
func (b *browser) call(method string, params any, result any) error {
	b.nextID++
	id := b.nextID
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if b.session != "" && !strings.HasPrefix(method, "Target.") && !strings.HasPrefix(method, "Browser.") {
		msg["sessionId"] = b.session
	}
	data, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	if _, err := b.toChrome.Write(append(data, 0)); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	deadline := time.After(cdpTimeout)
	for {
		select {
		case m, ok := <-b.msgs:
			if !ok {
				return fmt.Errorf("%s: the browser went away", method)
			}
			if m.ID != id {
				if m.Method != "" {
					b.events = append(b.events, m)
				}
				continue
			}
			if m.Error != nil {
				return fmt.Errorf("%s: %s (%d)", method, m.Error.Message, m.Error.Code)
			}
			if result != nil {
				return json.Unmarshal(m.Result, result)
			}
			return nil
		case <-deadline:
			return fmt.Errorf("%s: no answer in %s", method, cdpTimeout)
		}
	}
}

// waitFor returns once an event of method has arrived after the events
// already seen (from index since on).
func (b *browser) waitFor(method string, since int) error {
	deadline := time.After(cdpTimeout)
	for {
		for _, e := range b.events[since:] {
			if e.Method == method {
				return nil
			}
		}
		select {
		case m, ok := <-b.msgs:
			if !ok {
				return fmt.Errorf("waiting for %s: the browser went away", method)
			}
			if m.Method != "" {
				b.events = append(b.events, m)
			}
		case <-deadline:
			return fmt.Errorf("no %s in %s", method, cdpTimeout)
		}
	}
}

// open loads url and waits for its load event.
func (b *browser) open(t testing.TB, url string) {
	t.Helper()
	// By way of about:blank, so that a URL that differs from the page's
	// only by its fragment loads anew too.
	for _, u := range []string{"about:blank", url} {
		since := len(b.events)
		if err := b.call("Page.navigate", map[string]any{"url": u}, nil); err != nil {
			t.Fatal(err)
		}
		if err := b.waitFor("Page.loadEventFired", since); err != nil {
			t.Fatal(err)
		}
	}
}

// eval evaluates a JavaScript expression in the page and decodes its value.
func (b *browser) eval(t testing.TB, expr string, into any) {
	t.Helper()
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := b.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &res); err != nil {
		t.Fatal(err)
	}
	if e := res.ExceptionDetails; e != nil {
		t.Fatalf("%s\nthrew %s %s", expr, e.Text, e.Exception.Description)
	}
	if into != nil {
		if err := json.Unmarshal(res.Result.Value, into); err != nil {
			t.Fatalf("%s\n= %s: %v", expr, res.Result.Value, err)
		}
	}
}

// typeText types text into the focused element as keyboard input does.
func (b *browser) typeText(t testing.TB, text string) {
	t.Helper()
	if err := b.call("Input.insertText", map[string]any{"text": text}, nil); err != nil {
		t.Fatal(err)
	}
}

// screenshot saves the whole page, not only the viewport, as a PNG.
func (b *browser) screenshot(t testing.TB, path string) {
	t.Helper()
	var shot struct {
		Data string `json:"data"`
	}
	if err := b.call("Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}, &shot); err != nil {
		t.Fatal(err)
	}
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// problems are the page's uncaught exceptions and the console's errors
// (a Content-Security-Policy violation among them), as text.
func (b *browser) problems() []string {
	var out []string
	for _, e := range b.events {
		switch e.Method {
		case "Runtime.exceptionThrown":
			out = append(out, "exception: "+string(e.Params))
		case "Log.entryAdded":
			var p struct {
				Entry struct {
					Level, Text, Source, URL string
				} `json:"entry"`
			}
			if json.Unmarshal(e.Params, &p) == nil && (p.Entry.Level == "error" || p.Entry.Level == "warning") {
				out = append(out, fmt.Sprintf("console %s (%s): %s %s", p.Entry.Level, p.Entry.Source, p.Entry.Text, p.Entry.URL))
			}
		case "Runtime.consoleAPICalled":
			out = append(out, "console call: "+string(e.Params))
		}
	}
	return out
}

func (b *browser) close() {
	done := make(chan error, 1)
	go func() { done <- b.cmd.Wait() }()
	_ = b.call("Browser.close", nil, nil) // it may close before it answers
	b.toChrome.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		// Only the process group this test started.
		_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
		if err := <-done; err != nil && !errors.Is(err, os.ErrProcessDone) {
			b.t.Logf("chromium: %v", err) // cleanup runs on the test that started it
		}
	}
}
