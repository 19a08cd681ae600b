//go:build !linux

package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gofrs/flock"
)

// Elsewhere than Linux the run lock is an OS file lock (flock, LockFileEx)
// on "<state file>.<job>.lock", named after the state file's real path
// (symlinks resolved), so that a symlinked state path shares the lock. The
// run rows' owner check (runs.owner) still keeps a second writer from
// overwriting a run it does not own if the lock file is deleted mid-run.

// lockPath returns the job's lock file.
func (s *Store) lockPath(job string) string {
	real, err := filepath.EvalSymlinks(s.abs)
	if err != nil {
		real = s.abs
	}
	return real + "." + job + ".lock"
}

func (s *Store) osLock(job string) (release func() error, ok bool, err error) {
	path := s.lockPath(job)
	fl := flock.New(path, flock.SetPermissions(0o600))
	ok, err = fl.TryLock()
	if err != nil {
		return nil, false, fmt.Errorf("lock file %s: %w", path, err)
	}
	if !ok {
		return nil, false, nil
	}
	return fl.Unlock, true, nil
}

func (s *Store) osHeld(job string) (bool, error) {
	path := s.lockPath(job)
	fl := flock.New(path, flock.SetFlag(os.O_RDONLY))
	ok, err := fl.TryRLock()
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("lock file %s: %w", path, err)
	}
	if ok {
		return false, fl.Unlock()
	}
	return true, nil
}
