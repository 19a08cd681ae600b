package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/idemsync/idemsync/contract"
)

// Closing any descriptor of a file drops every POSIX (fcntl) lock the
// process holds on that file, SQLite's own included: the shared lock that
// tells another process closing a WAL state file it is not the file's last
// user, and must not checkpoint it and delete its -wal and -shm files
// under a run that is still writing to them (docs/operations.md,
// "Locks"). So this package never closes a descriptor of a state file
// while a Store of that file is open in the process: the descriptors it
// opens (the header check, the lock probe, the run locks) belong to one
// stateFile per file per process, shared by the Stores of that file, and
// are closed with the last of them, after its database.

// stateFiles are the state files open in this process.
var stateFiles struct {
	mu    sync.Mutex
	files []*stateFile
}

// stateFile is the process's descriptors of one state file.
type stateFile struct {
	f     *os.File    // opened first; read and probed, never locked
	info  os.FileInfo // the file's identity
	refs  int         // the Stores using it
	spare []*os.File  // run lock descriptors not locking anything (lock_linux.go)
	kept  []*os.File  // other descriptors, closed with the rest
}

// openStateFile returns the process's descriptors of the state file at
// path (absolute), creating the file (0600) and its folder (0700) when
// missing, and reports whether it created the file. It rejects an existing
// file that is not a SQLite database. closeStateFile gives it back.
func openStateFile(path string) (sf *stateFile, created bool, err error) {
	stateFiles.mu.Lock()
	defer stateFiles.mu.Unlock()
	st, err := os.Stat(path)
	switch {
	case err == nil && !st.Mode().IsRegular():
		return nil, false, fmt.Errorf("%w: it is %s, not a regular file", errNotOurs, fileKind(st.Mode()))
	case err == nil:
		if sf := findStateFile(st); sf != nil {
			if err := checkHeader(sf.f); err != nil {
				return nil, false, err
			}
			sf.refs++
			return sf, false, nil
		}
	case errors.Is(err, fs.ErrNotExist):
		dir := filepath.Dir(path)
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, false, fmt.Errorf("create folder: %w", err)
			}
		}
	default:
		return nil, false, fmt.Errorf("stat: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		created = true
	} else if !errors.Is(err, fs.ErrExist) {
		return nil, false, fmt.Errorf("create: %w", err)
	} else if f, err = os.Open(path); err != nil {
		return nil, false, fmt.Errorf("open: %w", err)
	}
	if st, err = f.Stat(); err != nil {
		f.Close() // no Store of this process has this file: it is not in stateFiles
		return nil, false, fmt.Errorf("stat: %w", err)
	}
	if sf := findStateFile(st); sf != nil {
		// Replaced by the file another Store has open between the Stat
		// and the open: that Store's locks live on it, so keep f.
		sf.kept = append(sf.kept, f)
		if err := checkHeader(sf.f); err != nil {
			return nil, false, err
		}
		sf.refs++
		return sf, false, nil
	}
	if !created {
		if err := checkHeader(f); err != nil {
			f.Close() // not in stateFiles: no Store of this process has it
			return nil, false, err
		}
	}
	sf = &stateFile{f: f, info: st, refs: 1}
	stateFiles.files = append(stateFiles.files, sf)
	return sf, created, nil
}

// findStateFile returns the open state file that is st, or nil.
func findStateFile(st os.FileInfo) *stateFile {
	for _, sf := range stateFiles.files {
		if os.SameFile(sf.info, st) {
			return sf
		}
	}
	return nil
}

// closeStateFile gives back a Store's use of sf; the last one closes its
// descriptors. The Store's database must be closed first.
func closeStateFile(sf *stateFile) error {
	stateFiles.mu.Lock()
	defer stateFiles.mu.Unlock()
	if sf.refs--; sf.refs > 0 {
		return nil
	}
	for i, o := range stateFiles.files {
		if o == sf {
			stateFiles.files = append(stateFiles.files[:i], stateFiles.files[i+1:]...)
			break
		}
	}
	err := sf.f.Close()
	for _, f := range append(sf.spare, sf.kept...) {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// takeDescriptor returns a descriptor of sf opened read-write that locks
// nothing: a spare one or a new one. giveBack returns it.
func (sf *stateFile) takeDescriptor(path string) (*os.File, error) {
	stateFiles.mu.Lock()
	defer stateFiles.mu.Unlock()
	if n := len(sf.spare); n > 0 {
		f := sf.spare[n-1]
		sf.spare = sf.spare[:n-1]
		return f, nil
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !os.SameFile(st, sf.info) {
		// Another file under the path now: it may be another Store's, so
		// keep f (closing it could drop that Store's locks).
		sf.kept = append(sf.kept, f)
		if err == nil {
			err = fmt.Errorf("%s is no longer the file this process opened", path)
		}
		return nil, err
	}
	return f, nil
}

// giveBack returns f, which locks nothing, to sf's spares; kept is for a
// descriptor whose lock could not be released.
func (sf *stateFile) giveBack(f *os.File, spare bool) {
	stateFiles.mu.Lock()
	defer stateFiles.mu.Unlock()
	if spare {
		sf.spare = append(sf.spare, f)
	} else {
		sf.kept = append(sf.kept, f)
	}
}

// errReplaced is a state file no longer at its path.
var errReplaced = errors.New("the file was removed or replaced since this run opened it (its path names another file, or none): what the run records would go to the file no longer there, not to the state at the path")

// stillAtPath returns errReplaced when the path no longer names the file
// this Store opened: removed, or replaced (a backup moved over it). A run
// checks it before it records a page or its end, so that it stops instead
// of writing its progress where no later command reads it
// (docs/operations.md, "The state file").
func (s *Store) stillAtPath() error {
	st, err := os.Stat(s.abs)
	if err == nil && os.SameFile(st, s.file.info) {
		return nil
	}
	return errReplaced
}

// replaced is op's error for a state file no longer at its path.
func (s *Store) replaced(op string, err error) error {
	return &contract.Error{Class: contract.Permanent, Msg: fmt.Sprintf("state file %s: %s", s.path, op), Err: err,
		Hint: "never remove, move or replace a state file while a run of it is in progress; run again: it works on the state file now at the path"}
}
