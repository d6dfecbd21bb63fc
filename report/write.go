package report

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Format names one way to print a report (the -o flag).
type Format string

// The output formats. Each is rendered by its own file (format_<name>.go)
// from the report value alone: no renderer recomputes status or summary.
const (
	FormatTable    Format = "table"
	FormatDiff     Format = "diff"
	FormatJSON     Format = "json"
	FormatYAML     Format = "yaml"
	FormatMarkdown Format = "markdown"
	FormatSARIF    Format = "sarif"
	FormatJUnit    Format = "junit"
	FormatHTML     Format = "html"
)

// Formats lists every output format, in the order help text shows them.
var Formats = []Format{FormatTable, FormatDiff, FormatJSON, FormatYAML, FormatMarkdown, FormatSARIF, FormatJUnit, FormatHTML}

// ParseFormat returns the format named s (case-insensitive), or an error that
// lists the valid names.
func ParseFormat(s string) (Format, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	for _, f := range Formats {
		if string(f) == name {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown output format %q (valid: %s)", s, formatList())
}

func formatList() string {
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = string(f)
	}
	return strings.Join(names, ", ")
}

// DefaultMaxValueWidth is where table and Markdown cut a long Git or live
// value unless WriteOptions.Wide is set.
const DefaultMaxValueWidth = 40

// WriteOptions tune the human-facing formats (table, Markdown, the message
// text of SARIF and JUnit). The machine-readable parts are never cut.
type WriteOptions struct {
	// Color adds ANSI colours by class to the table. The CLI sets it from
	// ColorFor(os.Stdout).
	Color bool
	// Wide prints values whole instead of cutting them at MaxValueWidth.
	Wide bool
	// Now is the time "how long ago" is measured from; zero means the
	// report's ScannedAt, which keeps output reproducible.
	Now time.Time
	// MaxValueWidth is the width, in characters, at which a value is cut
	// with "…"; 0 means DefaultMaxValueWidth.
	MaxValueWidth int
	// Width is the terminal's width in columns, which the table fits its
	// lines into; 0 means no limit, and Wide ignores it. The CLI sets it from
	// WidthFor(os.Stdout).
	Width int
}

// DefaultWriteOptions returns options for plain, non-wide output.
func DefaultWriteOptions() WriteOptions {
	return WriteOptions{MaxValueWidth: DefaultMaxValueWidth}
}

// now is the time ages are measured from.
func (o WriteOptions) now(r *Report) time.Time {
	if o.Now.IsZero() {
		return r.ScannedAt
	}
	return o.Now
}

// valueWidth is the width values are cut at; 0 means no cut.
func (o WriteOptions) valueWidth() int {
	switch {
	case o.Wide:
		return 0
	case o.MaxValueWidth <= 0:
		return DefaultMaxValueWidth
	default:
		return o.MaxValueWidth
	}
}

// width is the line width the table fits; 0 means no limit.
func (o WriteOptions) width() int {
	if o.Wide || o.Width < 0 {
		return 0
	}
	return o.Width
}

// Write renders r to w in format f.
func Write(w io.Writer, f Format, r *Report, opts WriteOptions) error {
	if r == nil {
		return errors.New("write report: no report")
	}
	var err error
	switch f {
	case FormatTable:
		err = writeTable(w, r, opts)
	case FormatDiff:
		err = writeDiff(w, r)
	case FormatJSON:
		err = writeJSON(w, r)
	case FormatYAML:
		err = writeYAML(w, r)
	case FormatMarkdown:
		err = writeMarkdown(w, r, opts)
	case FormatSARIF:
		err = writeSARIF(w, r, opts)
	case FormatJUnit:
		err = writeJUnit(w, r, opts)
	case FormatHTML:
		err = writeHTML(w, r, opts)
	default:
		return fmt.Errorf("write report: unknown output format %q (valid: %s)", f, formatList())
	}
	if err != nil {
		return fmt.Errorf("write %s report: %w", f, err)
	}
	return nil
}

// Output is one -o flag: a format and the file it goes to ("" for stdout).
type Output struct {
	Format Format
	File   string
}

// ParseOutputs parses -o values, each FORMAT or FORMAT=FILE ("FORMAT=-" is
// stdout too, and so are /dev/stdout and the names of file descriptor 1:
// two outputs there would interleave). At most one output may go to stdout
// and no file may be named twice, by the same path written two ways, or
// through a link to a file another output names. Every bad spec is
// reported, not just the first. No specs gives no outputs: the caller
// picks the default.
func ParseOutputs(specs []string) ([]Output, error) {
	var (
		outs   []Output
		errs   []error
		stdout string
		files  = map[string]string{}
	)
	for _, spec := range specs {
		name, file, hasFile := strings.Cut(spec, "=")
		f, err := ParseFormat(name)
		if err != nil {
			errs = append(errs, fmt.Errorf("output %q: %w", spec, err))
			continue
		}
		file = strings.TrimSpace(file)
		switch {
		case hasFile && file == "":
			errs = append(errs, fmt.Errorf("output %q: no file after '=' (use %s for stdout)", spec, f))
			continue
		case file == "-" || stdoutNames[filepath.Clean(file)]:
			file = ""
		}
		if file == "" {
			if stdout != "" {
				errs = append(errs, fmt.Errorf("output %q: only one output can go to stdout, and %q already does; give this one a file (%s=FILE)", spec, stdout, f))
				continue
			}
			stdout = spec
		} else {
			key, err := filepath.Abs(file)
			if err != nil {
				key = filepath.Clean(file)
			}
			prev, ok := files[key]
			if !ok {
				if fi, err := os.Stat(file); err == nil {
					for other, otherSpec := range files {
						if ofi, err := os.Stat(other); err == nil && os.SameFile(fi, ofi) {
							prev, ok = otherSpec, true
						}
					}
				}
			}
			if ok {
				errs = append(errs, fmt.Errorf("output %q: file %s is already the target of %q", spec, file, prev))
				continue
			}
			files[key] = spec
		}
		outs = append(outs, Output{Format: f, File: file})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return outs, nil
}

// stdoutNames are the paths that name the process's stdout.
var stdoutNames = map[string]bool{"/dev/stdout": true, "/dev/fd/1": true, "/proc/self/fd/1": true}

// WriteFileAtomic writes a file through write so that path holds either its
// old content or the complete new one, never a half-written report: write
// fills a temporary file in the same directory, which is renamed over path
// only when write succeeded. The file keeps the mode of the file it
// replaces, or gets 0644. It does not wait for the disk, as kubectl's and
// helm's output files do not: a crash of the machine (not of driftscan)
// right after may lose what was written, which the next scan writes again.
// A file that must outlive such a crash is written with WriteFileDurable.
//
// A path that is a link to a file is written through: the link stays and
// its target is replaced, as editors do. A path that is a pipe or a
// character device (/dev/null, /dev/stderr on a terminal, the /dev/fd/63 of
// a shell's process substitution) is written to as a stream, as curl -o and
// tee write: there is no file to replace, and renaming over it would put a
// file where the device or the pipe was.
func WriteFileAtomic(path string, write func(io.Writer) error) error {
	return writeFileAtomic(path, atomicWrite{mode: 0o644, named: true, streams: true}, write)
}

// WriteFileDurable is WriteFileAtomic, and syncs the new content to the
// disk before the rename (fsync): for the notification state, whose loss
// would notify again what was already notified. On these machines the sync
// of a 2 MB report took 5 to 8 ms at the end of every scan. A link is
// written through as WriteFileAtomic does; what it writes must be read
// back, so a pipe or a device is refused.
func WriteFileDurable(path string, write func(io.Writer) error) error {
	return writeFileAtomic(path, atomicWrite{mode: 0o644, named: true, durable: true}, write)
}

// WritePrivateFileAtomic writes data to path as WriteFileAtomic does, in a
// folder it makes (0700) if need be, as a file readable by the user alone
// (0600) whatever the mode of the file it replaces: the scan's caches. It
// does not sync either: a cache file a crash left torn or empty fails the
// next scan's checks (a checksum, or JSON that must parse whole) and is
// dropped, and that scan does the work it would have spared; its entries
// are keyed by what they were made from, so an old one never answers for
// new content. A link in the way is replaced, not followed. The file is
// the pieces of data one after the other, so a caller need not copy a
// large body to put a header before it.
func WritePrivateFileAtomic(path string, data ...[]byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return writeFileAtomic(path, atomicWrite{mode: 0o600}, func(w io.Writer) error {
		for _, d := range data {
			if _, err := w.Write(d); err != nil {
				return err
			}
		}
		return nil
	})
}

// atomicWrite says how writeFileAtomic writes.
type atomicWrite struct {
	// mode is a new file's.
	mode os.FileMode
	// named is a path the user named (a report, the state): a file
	// replaced keeps its mode, and a link there is followed, its target
	// replaced. A private file gets mode, and a link in its way is replaced.
	named bool
	// durable syncs the new content before the rename.
	durable bool
	// streams writes to a pipe or a character device at path as a stream;
	// without it they are refused.
	streams bool
}

// writeFileAtomic writes path through write as w says.
func writeFileAtomic(path string, w atomicWrite, write func(io.Writer) error) (err error) {
	mode := w.mode
	if fi, statErr := os.Stat(path); statErr == nil {
		switch {
		case fi.Mode().IsRegular():
			if w.named {
				mode = fi.Mode().Perm()
				target, err := filepath.EvalSymlinks(path)
				if err != nil {
					return fmt.Errorf("write %s: %w", path, err)
				}
				path = target
			}
		case w.streams && fi.Mode()&(os.ModeNamedPipe|os.ModeCharDevice) != 0:
			return writeStream(path, write)
		default:
			return fmt.Errorf("write %s: not a regular file", path)
		}
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close() // already failing; the close error adds nothing
			if rmErr := os.Remove(tmp.Name()); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
				err = errors.Join(err, fmt.Errorf("remove temporary file: %w", rmErr))
			}
		}
	}()
	if err = write(tmp); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Chmod(mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if w.durable {
		if err = tmp.Sync(); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// writeStream writes to the pipe or the device at path as it is, without
// truncating or creating anything.
func writeStream(path string, write func(io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := write(f); err != nil {
		_ = f.Close() // already failing; the close error adds nothing
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
