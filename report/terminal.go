package report

import (
	"os"
	"strconv"
	"strings"

	"github.com/mattn/go-isatty"
	"golang.org/x/term"
)

// ColorFor reports whether output written to f may use colour: f is a
// terminal and NO_COLOR is not set to a non-empty value (https://no-color.org)
// and TERM is not "dumb".
func ColorFor(f *os.File) bool {
	return colorFor(isTerminalFile(f), os.LookupEnv)
}

// colorFor is ColorFor with the terminal check done and the environment
// injected.
func colorFor(terminal bool, lookupEnv func(string) (string, bool)) bool {
	if !terminal {
		return false
	}
	if v, ok := lookupEnv("NO_COLOR"); ok && v != "" {
		return false
	}
	if v, _ := lookupEnv("TERM"); v == "dumb" {
		return false
	}
	return true
}

// WidthFor is the width, in columns, that a table written to f should fit
// (WriteOptions.Width): 0, no limit, when f is not a terminal; otherwise
// COLUMNS when it is set to a positive number, else the width the terminal
// reports, else 0.
func WidthFor(f *os.File) int {
	if !isTerminalFile(f) {
		return 0
	}
	return widthFor(func() (int, error) { w, _, err := term.GetSize(int(f.Fd())); return w, err }, os.LookupEnv)
}

// widthFor is WidthFor for a terminal, with its size and the environment
// injected.
func widthFor(size func() (int, error), lookupEnv func(string) (string, bool)) int {
	if v, ok := lookupEnv("COLUMNS"); ok {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 {
			return n
		}
	}
	if w, err := size(); err == nil && w > 0 {
		return w
	}
	return 0
}

func isTerminalFile(f *os.File) bool {
	if f == nil {
		return false
	}
	fd := f.Fd()
	return isatty.IsTerminal(fd) || isatty.IsCygwinTerminal(fd)
}
