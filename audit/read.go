package audit

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Options configure Read.
type Options struct {
	// Paths are audit log files, or folders whose files are read (rotated
	// logs: audit.log, audit-2026-12-01T10-00-00.000.log.gz, ...). "-" is
	// Stdin. Gzip is recognised by its magic bytes, whatever the name.
	Paths []string
	Stdin io.Reader
	// Keep says which objects' events to keep (ObjectRef without
	// subresource); nil keeps every object's.
	Keep func(ObjectRef) bool
	// MaxBody drops request bodies larger than this (the event is kept
	// without it); 0 keeps every body.
	MaxBody int
	// MaxLine skips lines longer than this as malformed.
	MaxLine int
}

// DefaultOptions returns the limits Read uses unless told otherwise: bodies
// up to 1 MiB, lines up to 16 MiB (the API server accepts requests of 3 MiB).
func DefaultOptions() Options {
	return Options{MaxBody: 1 << 20, MaxLine: 16 << 20}
}

// Read reads every input into an Index. It never fails: an input that is
// missing, cut off or malformed becomes one of the Index's warnings, and
// what could be read is kept.
func Read(ctx context.Context, opts Options) *Index {
	if opts.MaxLine <= 0 {
		opts.MaxLine = DefaultOptions().MaxLine
	}
	ix := newIndex()
	for _, p := range opts.Paths {
		if ctx.Err() != nil {
			ix.warnings = append(ix.warnings, fmt.Sprintf("audit log %s: not read: %v", p, ctx.Err()))
			continue
		}
		readPath(ctx, p, opts, ix)
	}
	ix.sort()
	return ix
}

func readPath(ctx context.Context, p string, opts Options, ix *Index) {
	if p == "-" {
		if opts.Stdin == nil {
			ix.warnings = append(ix.warnings, "audit log -: no standard input")
			return
		}
		readStream(ctx, "-", opts.Stdin, opts, ix)
		return
	}
	fi, err := os.Stat(p)
	if err != nil {
		ix.warnings = append(ix.warnings, fmt.Sprintf("audit log %s: %v", p, errors.Unwrap(err)))
		return
	}
	if !fi.IsDir() {
		readFile(ctx, p, opts, ix)
		return
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		ix.warnings = append(ix.warnings, fmt.Sprintf("audit log folder %s: %v", p, err))
		return
	}
	var files []string
	for _, e := range entries {
		if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") {
			files = append(files, filepath.Join(p, e.Name()))
		}
	}
	if len(files) == 0 {
		ix.warnings = append(ix.warnings, fmt.Sprintf("audit log folder %s: no files in it", p))
		return
	}
	sort.Strings(files)
	for _, f := range files {
		readFile(ctx, f, opts, ix)
	}
}

func readFile(ctx context.Context, p string, opts Options, ix *Index) {
	f, err := os.Open(p)
	if err != nil {
		ix.warnings = append(ix.warnings, fmt.Sprintf("audit log %s: %v", p, errors.Unwrap(err)))
		return
	}
	defer f.Close()
	readStream(ctx, p, f, opts, ix)
}

// stream reads one input.
type stream struct {
	name string
	opts Options
	ix   *Index
	// read counts the audit events of this input.
	read int64
	// malformed counts entries that are neither valid JSON nor an audit
	// event; first describes the first of them.
	malformed int
	first     string
	// entries counts the non-blank lines or document elements.
	entries int
	// cut: the last line had no newline and did not parse.
	cut bool
}

func readStream(ctx context.Context, name string, r io.Reader, opts Options, ix *Index) {
	s := &stream{name: name, opts: opts, ix: ix}
	br := bufio.NewReaderSize(r, 1<<20)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			ix.warnings = append(ix.warnings, fmt.Sprintf("audit log %s: gzip: %v", name, err))
			return
		}
		defer gz.Close()
		br = bufio.NewReaderSize(gz, 1<<20)
	}
	err := s.readAll(ctx, br)
	s.finish(err)
}

// readAll reads JSON lines, or one or more JSON documents when the input
// does not start with a complete JSON value on its first line (the pretty
// output of `aws logs filter-log-events`, `gcloud logging read
// --format=json`).
func (s *stream) readAll(ctx context.Context, br *bufio.Reader) error {
	lr := lineReader{br: br, max: s.opts.MaxLine}
	line, complete, err := lr.next()
	if err != nil {
		return err
	}
	if t := bytes.TrimSpace(line); complete && (string(t) == "{" || bytes.HasPrefix(t, []byte("["))) && !json.Valid(t) {
		rest := io.MultiReader(bytes.NewReader(append(line, '\n')), br)
		return s.documents(ctx, rest)
	}
	for n := 1; line != nil || complete; n++ {
		s.line(n, line, complete)
		if !complete {
			return nil
		}
		if n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if line, complete, err = lr.next(); err != nil {
			return fmt.Errorf("after line %d: %w", n, err)
		}
	}
	return nil
}

// line handles one line of JSON lines input. complete is false for a last
// line without a newline.
func (s *stream) line(n int, line []byte, complete bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	s.entries++
	src := fmt.Sprintf("%s:%d", s.name, n)
	if len(line) > s.opts.MaxLine {
		s.bad(src, fmt.Errorf("line longer than %d bytes", s.opts.MaxLine))
		return
	}
	if line[0] != '{' {
		// A CloudWatch Logs export to S3: "TIMESTAMP MESSAGE" lines.
		if ts, msg, ok := bytes.Cut(line, []byte{' '}); ok && len(msg) > 0 && msg[0] == '{' {
			if _, err := time.Parse(time.RFC3339Nano, string(ts)); err == nil {
				line = msg
			}
		}
	}
	if skipped, t := s.quickSkip(line); skipped {
		s.read++
		s.ix.saw(t)
		return
	}
	if err := s.value(line, src, 0); err != nil {
		if !complete {
			s.cut = true
			return
		}
		s.bad(src, err)
	}
}

func (s *stream) bad(src string, err error) {
	if s.malformed == 0 {
		s.first = fmt.Sprintf("%s: %v", src, err)
	}
	s.malformed++
}

// errNotAudit: valid JSON, but no audit event in any format read.
var errNotAudit = errors.New("not an audit event, a CloudWatch Logs entry or a GKE audit entry")

// value handles one JSON value: an audit event, an export entry wrapping
// one, or a page of entries.
func (s *stream) value(raw []byte, src string, depth int) error {
	if len(raw) > 0 && raw[0] == '[' && depth < 2 {
		var els []json.RawMessage
		if err := json.Unmarshal(raw, &els); err != nil {
			return err
		}
		for i, el := range els {
			esrc := fmt.Sprintf("%s#%d", src, i+1)
			if err := s.value(el, esrc, depth+1); err != nil {
				s.bad(esrc, err)
			}
		}
		return nil
	}
	var e entry
	if err := json.Unmarshal(raw, &e); err != nil {
		return err
	}
	switch {
	case e.isNative():
		s.read++
		s.ix.saw(e.StageTimestamp)
		if ev, v := e.native(); v == keep {
			ev.Source = src
			s.ix.add(ev, s.opts.Keep, s.opts.MaxBody)
		}
	case e.isGKE():
		s.read++
		s.ix.saw(e.gkeTime())
		if ev, v := e.gke(); v == keep {
			ev.Source = src
			s.ix.add(ev, s.opts.Keep, s.opts.MaxBody)
		}
	case e.Message != nil && depth < 2:
		if err := s.value([]byte(*e.Message), src, depth+1); err != nil {
			return fmt.Errorf("message: %w", err)
		}
	case (e.Events != nil || e.LogEvents != nil) && depth < 2:
		for i, el := range append(e.Events, e.LogEvents...) {
			esrc := fmt.Sprintf("%s#%d", src, i+1)
			if err := s.value(el, esrc, depth+1); err != nil {
				s.bad(esrc, err)
			}
		}
	case e.ProtoPayload != nil:
		// A Cloud Audit Logs entry of another service: not ours to count.
	default:
		return errNotAudit
	}
	return nil
}

// nativePrefix starts every line the API server's log backend writes; its
// fields come in a fixed order (kind, apiVersion, level, auditID, stage,
// requestURI, verb, ...), so the stage and verb can be read without
// decoding the line.
var nativePrefix = []byte(`{"kind":"Event","apiVersion":"audit.k8s.io/v1",`)

// quickSkip reports whether a line of the API server's own format is an
// event that cannot explain a finding, without decoding the line: another
// stage than ResponseComplete, a read-only verb, or (with Keep) an object
// no app declares. It also returns the event's stageTimestamp. Inside a JSON
// string every quote is escaped, so the first `"stage":"`, `"verb":"` and
// `"objectRef":{` of such a line are the event's own (they come before the
// request body), and the last `"stageTimestamp":"` is the event's, as only
// annotations (strings) follow it.
func (s *stream) quickSkip(line []byte) (bool, time.Time) {
	if !bytes.HasPrefix(line, nativePrefix) {
		return false, time.Time{}
	}
	stage := fieldValue(line, `"stage":"`, false)
	verb := fieldValue(line, `"verb":"`, false)
	if stage == nil || verb == nil {
		return false, time.Time{}
	}
	if string(stage) == "ResponseComplete" && mutatingVerbs[string(verb)] && !s.unwanted(line) {
		return false, time.Time{}
	}
	var t time.Time
	if ts := fieldValue(line, `"stageTimestamp":"`, true); ts != nil {
		t, _ = time.Parse(time.RFC3339Nano, string(ts))
	}
	return true, t
}

// unwanted reports whether Keep rejects the object of a line, read from its
// objectRef alone (a flat object of strings).
func (s *stream) unwanted(line []byte) bool {
	if s.opts.Keep == nil {
		return false
	}
	i := bytes.Index(line, []byte(`"objectRef":{`))
	if i < 0 {
		return false
	}
	ref := line[i+len(`"objectRef":`):]
	end := bytes.IndexByte(ref, '}')
	if end < 0 {
		return false
	}
	var o objectRef
	if json.Unmarshal(ref[:end+1], &o) != nil {
		return false
	}
	return !s.opts.Keep(ObjectRef{Group: o.APIGroup, Resource: o.Resource, Namespace: o.Namespace, Name: o.Name})
}

// fieldValue returns the string after the first (or last) key in line, up
// to the closing quote; nil when absent or escaped.
func fieldValue(line []byte, key string, last bool) []byte {
	var i int
	if last {
		i = bytes.LastIndex(line, []byte(key))
	} else {
		i = bytes.Index(line, []byte(key))
	}
	if i < 0 {
		return nil
	}
	v := line[i+len(key):]
	end := bytes.IndexByte(v, '"')
	if end < 0 || bytes.IndexByte(v[:end], '\\') >= 0 {
		return nil
	}
	return v[:end]
}

// documents reads one or more JSON documents: arrays of entries, pages
// with events or logEvents (streamed element by element, so a page of a
// gigabyte is never held whole), and single pretty-printed entries.
func (s *stream) documents(ctx context.Context, r io.Reader) error {
	dec := json.NewDecoder(r)
	doc := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return s.docErr(dec, err)
		}
		doc++
		src := fmt.Sprintf("%s#%d", s.name, doc)
		switch tok {
		case json.Delim('['):
			if err := s.elements(ctx, dec, src); err != nil {
				return err
			}
		case json.Delim('{'):
			if err := s.object(ctx, dec, src); err != nil {
				return err
			}
		default:
			s.bad(src, errNotAudit)
		}
	}
}

// elements streams the elements of an array whose '[' was read.
func (s *stream) elements(ctx context.Context, dec *json.Decoder, src string) error {
	for i := 1; dec.More(); i++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return s.docErr(dec, err)
		}
		esrc := fmt.Sprintf("%s.%d", src, i)
		s.entries++
		if err := s.value(raw, esrc, 0); err != nil {
			s.bad(esrc, err)
		}
		if i%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if _, err := dec.Token(); err != nil { // ']'
		return s.docErr(dec, err)
	}
	return nil
}

// object reads an object whose '{' was read: the arrays of a page are
// streamed, the other members collected, and an object with no page in it
// is handled as one entry.
func (s *stream) object(ctx context.Context, dec *json.Decoder, src string) error {
	members := map[string]json.RawMessage{}
	paged := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return s.docErr(dec, err)
		}
		key, _ := tok.(string)
		if key == "events" || key == "logEvents" || key == "entries" {
			tok, err := dec.Token()
			if err != nil {
				return s.docErr(dec, err)
			}
			if tok == json.Delim('[') {
				paged = true
				if err := s.elements(ctx, dec, src); err != nil {
					return err
				}
				continue
			}
			return s.docErr(dec, fmt.Errorf("%s is not an array", key))
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return s.docErr(dec, err)
		}
		members[key] = raw
	}
	if _, err := dec.Token(); err != nil { // '}'
		return s.docErr(dec, err)
	}
	if paged {
		return nil
	}
	s.entries++
	raw, err := json.Marshal(members)
	if err != nil {
		return err
	}
	if err := s.value(raw, src, 0); err != nil {
		s.bad(src, err)
	}
	return nil
}

// errCut: a JSON document ended before it was complete.
var errCut = errors.New("cut off")

func (s *stream) docErr(dec *json.Decoder, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF {
		return errCut
	}
	return fmt.Errorf("at byte %d: %w", dec.InputOffset(), err)
}

// finish turns what went wrong into warnings.
func (s *stream) finish(err error) {
	w := func(format string, a ...any) {
		s.ix.warnings = append(s.ix.warnings, fmt.Sprintf("audit log %s: ", s.name)+fmt.Sprintf(format, a...))
	}
	switch {
	case errors.Is(err, errCut):
		s.cut = true
	case errors.Is(err, io.ErrUnexpectedEOF):
		w("cut off %s (truncated, or still being written): the rest was not read", strings.TrimSuffix(err.Error(), ": "+io.ErrUnexpectedEOF.Error()))
	case err != nil:
		w("read stopped %v", err)
	}
	if s.cut {
		w("cut off at the end (truncated, or still being written): the last entry was skipped")
	}
	if s.malformed > 0 {
		w("%d entries skipped that are not valid JSON or not audit events (first at %s)", s.malformed, s.first)
	}
	if s.read == 0 && s.entries > 0 && err == nil && !s.cut && s.malformed == 0 {
		w("no Kubernetes audit events in it")
	}
}

// lineReader reads lines of at most max bytes, skipping the rest of longer
// ones, with a buffer reused between calls.
type lineReader struct {
	br  *bufio.Reader
	max int
	buf []byte
}

// next returns the next line without its newline. complete is false when
// the input ended without a newline (line then holds what was there, nil
// at a clean end). A line longer than max comes back as max+1 bytes.
func (l *lineReader) next() (line []byte, complete bool, err error) {
	l.buf = l.buf[:0]
	for {
		chunk, err := l.br.ReadSlice('\n')
		if len(l.buf) <= l.max {
			l.buf = append(l.buf, chunk...)
		}
		switch {
		case err == nil:
			return trimNewline(l.buf), true, nil
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF:
			if len(l.buf) == 0 {
				return nil, false, nil
			}
			return l.buf, false, nil
		default:
			return nil, false, err
		}
	}
}

func trimNewline(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte{'\n'})
	return bytes.TrimSuffix(b, []byte{'\r'})
}
