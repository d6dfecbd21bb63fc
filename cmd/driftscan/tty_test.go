package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// runAsDriftscan, set to 1 in a child's environment, makes this test binary
// run main() instead of the tests: the child is driftscan itself, with the
// real os.Stdout and os.Stderr, so what it prints to a terminal is what a
// person would see.
const runAsDriftscan = "DRIFTSCAN_TEST_RUN_MAIN"

// runAlone set to "1" makes the test binary run the tests -test.run names
// without starting a control plane: a test that needs a fresh process
// starts one this way.
const runAlone = "DRIFTSCAN_TEST_RUN_ALONE"

// openPTY opens a pseudo-terminal cols columns wide with the kernel's
// /dev/ptmx (see pty(7)) and returns its two ends. Only the standard
// library's syscall package and golang.org/x/sys, already a dependency, are
// needed for it.
func openPTY(t *testing.T, cols, rows uint16) (master, tty *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pty number: %v", err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open pty: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	if err := unix.IoctlSetWinsize(int(tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: cols, Row: rows}); err != nil {
		t.Fatalf("set pty size: %v", err)
	}
	return master, tty
}

// ttyRun is one run of driftscan on a terminal.
type ttyRun struct {
	code   int
	raw    string   // every byte the terminal received
	screen []string // what it shows afterwards
	wraps  int      // characters the terminal had to put on a next line
	stderr string   // when stderr was not the terminal
}

// runOnTTY runs driftscan with stdin and stdout on a terminal cols columns
// wide, and stderr there too unless stderrToFile, with env added to the
// test's environment (less COLUMNS and NO_COLOR).
func runOnTTY(t *testing.T, cols uint16, stderrToFile bool, env []string, args ...string) ttyRun {
	t.Helper()
	master, tty := openPTY(t, cols, 50)
	cmd := exec.Command(os.Args[0], args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "COLUMNS=") && !strings.HasPrefix(kv, "NO_COLOR=") && !strings.HasPrefix(kv, "TERM=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, runAsDriftscan+"=1", "TERM=xterm-256color")
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	var errFile *os.File
	if stderrToFile {
		var err error
		if errFile, err = os.Create(t.TempDir() + "/stderr"); err != nil {
			t.Fatal(err)
		}
		defer errFile.Close()
		cmd.Stderr = errFile
	}
	// The child gets a session of its own with the terminal as its
	// controlling terminal, as a shell would start it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close() // the child holds it now; the master reads EIO once the child is gone
	var raw bytes.Buffer
	readErr := make(chan error, 1)
	go func() { _, err := io.Copy(&raw, master); readErr <- err }()
	err := cmd.Wait()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	if err := <-readErr; err != nil && !errors.Is(err, syscall.EIO) {
		t.Fatalf("read terminal: %v", err)
	}
	res := ttyRun{code: cmd.ProcessState.ExitCode(), raw: raw.String()}
	res.screen, res.wraps = emulate(res.raw, int(cols))
	if errFile != nil {
		b, err := os.ReadFile(errFile.Name())
		if err != nil {
			t.Fatal(err)
		}
		res.stderr = string(b)
	}
	return res
}

// emulate plays what a terminal received onto a screen cols wide, as a
// terminal would: "\r" returns to the first column, "\n" goes down a line,
// ESC [ K erases to the end of the line, other escape sequences (colours)
// take no room, and a character past the last column wraps to the next
// line, which is counted.
func emulate(raw string, cols int) (screen []string, wraps int) {
	var lines [][]rune
	row, col := 0, 0
	put := func(r rune) {
		for len(lines) <= row {
			lines = append(lines, nil)
		}
		for len(lines[row]) < col {
			lines[row] = append(lines[row], ' ')
		}
		if col < len(lines[row]) {
			lines[row][col] = r
		} else {
			lines[row] = append(lines[row], r)
		}
	}
	for i := 0; i < len(raw); {
		switch c := raw[i]; {
		case c == '\r':
			col = 0
			i++
		case c == '\n':
			row++
			i++
		case c == '\x1b' && i+1 < len(raw) && raw[i+1] == '[':
			j := i + 2
			for j < len(raw) && (raw[j] < '@' || raw[j] > '~') {
				j++
			}
			if j < len(raw) && raw[j] == 'K' && row < len(lines) && col < len(lines[row]) {
				lines[row] = lines[row][:col]
			}
			i = j + 1
		default:
			r, size := utf8.DecodeRuneInString(raw[i:])
			i += size
			if col >= cols {
				wraps++
				row, col = row+1, 0
			}
			put(r)
			col++
		}
	}
	for _, l := range lines {
		screen = append(screen, strings.TrimRight(string(l), " "))
	}
	return screen, wraps
}

func TestScanOnATerminalFitsItsWidthInColourAndErasesTheProgressLine(t *testing.T) {
	env.Need(t)
	ns := driftedWeb(t)
	args := []string{"scan", "--kubeconfig", env.Kubeconfig, "--path", "../../fixtures/apps/web", "-n", ns}

	t.Run("the terminal's own width", func(t *testing.T) {
		res := runOnTTY(t, 100, false, nil, args...)
		if res.code != 1 {
			t.Fatalf("exit %d, want 1 (drift); terminal:\n%s", res.code, strings.Join(res.screen, "\n"))
		}
		screen := strings.Join(res.screen, "\n")
		if !strings.Contains(res.raw, "comparing objects") {
			t.Errorf("no progress line was drawn on the terminal; it received %q", res.raw)
		}
		for _, stage := range []string{"rendering apps", "listing kinds", "comparing objects"} {
			if strings.Contains(screen, stage) {
				t.Errorf("the progress line (%q) is still on screen:\n%s", stage, screen)
			}
		}
		if len(res.screen) == 0 || !strings.HasPrefix(res.screen[0], "CLUSTER ") {
			t.Errorf("the report does not start on the terminal's first line:\n%s", screen)
		}
		if res.wraps > 0 {
			t.Errorf("%d characters ran past column 100 and wrapped:\n%s", res.wraps, screen)
		}
		// Colour: table is the default on a terminal, with the classes coloured.
		if !strings.Contains(res.raw, "\x1b[33mpipeline\x1b[0m") || !strings.Contains(res.raw, "\x1b[1;31mhuman\x1b[0m") {
			t.Errorf("the classes are not coloured on a terminal; it received %q", res.raw)
		}
		// 100 columns are too few for the image's row: git → live goes under
		// the path, and the row still names class, type, path, manager, age.
		image := lineIndex(res.screen, `.spec.template.spec.containers[name="app"].image`)
		if image < 0 || image+1 >= len(res.screen) {
			t.Fatalf("no row for the image finding:\n%s", screen)
		}
		for _, cell := range []string{"pipeline", "Changed", "kubectl-set"} {
			if !strings.Contains(res.screen[image], cell) {
				t.Errorf("the image row %q lacks %q", res.screen[image], cell)
			}
		}
		if next := res.screen[image+1]; strings.TrimSpace(next) != "nginx:1.25 → nginx:1.26" ||
			strings.Index(next, "nginx") != strings.Index(res.screen[image], ".spec") {
			t.Errorf("the line under the image row is %q, want git → live starting under the path", next)
		}
	})

	t.Run("COLUMNS overrides the terminal", func(t *testing.T) {
		res := runOnTTY(t, 200, false, []string{"COLUMNS=60"}, args...)
		for _, l := range res.screen {
			if utf8.RuneCountInString(l) > 60 && strings.Contains(strings.TrimSpace(l), " ") {
				t.Errorf("with COLUMNS=60 a line is %d wide: %q", utf8.RuneCountInString(l), l)
			}
		}
	})

	t.Run("no progress line when stderr is not the terminal", func(t *testing.T) {
		res := runOnTTY(t, 100, true, nil, args...)
		if res.stderr != "" {
			t.Errorf("stderr (a file) got %q, want nothing", res.stderr)
		}
		if strings.Contains(res.raw, "comparing objects") || strings.Contains(res.raw, "\r\x1b[K") {
			t.Errorf("the progress line reached the terminal through stdout: %q", res.raw)
		}
	})
}

func lineIndex(lines []string, sub string) int {
	for i, l := range lines {
		if strings.Contains(l, sub) {
			return i
		}
	}
	return -1
}
