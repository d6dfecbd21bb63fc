package notify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/calricon/driftscan/report"
)

// FileStore keeps the state in a JSON file, for CI. Writes are atomic (a
// temporary file in the same folder, then rename), so a reader never sees a
// torn file. Save re-reads the file and merges, but two scans saving at the
// same instant are not locked against each other: in a cluster, where scans
// may overlap, use a ConfigMapStore.
type FileStore struct {
	Path string
	// Now stamps the name of a corrupt file kept aside; nil means time.Now.
	Now func() time.Time
}

// Load reads the file; a missing file is an empty state. A file that is not
// a driftscan state is renamed to PATH.corrupt-<time> and reported with a
// *CorruptStateError beside an empty state.
func (f *FileStore) Load(ctx context.Context) (*State, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return NewState(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("state file:%s: %w", f.Path, err)
	}
	s, err := decodeState(data)
	if err != nil {
		kept, kerr := f.keepAside()
		if kerr != nil {
			return nil, fmt.Errorf("state file:%s is not a readable %s (%v) and could not be kept aside: %w", f.Path, StateKind, err, kerr)
		}
		return NewState(), &CorruptStateError{Ref: "file:" + f.Path, KeptAs: kept, Err: err}
	}
	return s, nil
}

// keepAside renames the file to PATH.corrupt-<time>, never over another file.
func (f *FileStore) keepAside() (string, error) {
	base := f.Path + ".corrupt-" + stamp(f.Now)
	for i := 0; i < 100; i++ {
		name := base
		if i > 0 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		// Link fails when name exists, where Rename would replace it.
		err := os.Link(f.Path, name)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		if err := os.Remove(f.Path); err != nil {
			return "", err
		}
		return name, nil
	}
	return "", fmt.Errorf("too many files named %s-*", base)
}

// Save merges s's changes into the file as it is now and writes it
// atomically. With no changes it writes nothing. When the file had become
// unreadable since Load, it is kept aside, the state is written, and the
// *CorruptStateError is returned.
func (f *FileStore) Save(ctx context.Context, s *State) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !s.Changed() {
		return nil
	}
	cur, err := f.Load(ctx)
	var corrupt *CorruptStateError
	if err != nil && !errors.As(err, &corrupt) {
		return err
	}
	s.replay(cur)
	data, err := s.encode()
	if err != nil {
		return fmt.Errorf("state file:%s: %w", f.Path, err)
	}
	if err := os.MkdirAll(filepath.Dir(f.Path), 0o755); err != nil {
		return fmt.Errorf("state file:%s: %w", f.Path, err)
	}
	err = report.WriteFileDurable(f.Path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	if err != nil {
		return fmt.Errorf("state file:%s: %w", f.Path, err)
	}
	s.journal = nil
	if corrupt != nil {
		// Saved, but what another writer left there was kept aside: say so.
		return corrupt
	}
	return nil
}

// Check encodes s and checks that its folder takes new files; a file has
// no size limit.
func (f *FileStore) Check(ctx context.Context, s *State) (Usage, error) {
	data, err := s.encode()
	if err != nil {
		return Usage{}, err
	}
	u := Usage{Bytes: len(data), Objects: len(s.Objects)}
	dir := filepath.Dir(f.Path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return u, fmt.Errorf("state file:%s: %w", f.Path, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(f.Path)+".check-*")
	if err != nil {
		return u, fmt.Errorf("state file:%s: %w", f.Path, err)
	}
	_ = tmp.Close()
	return u, os.Remove(tmp.Name())
}
