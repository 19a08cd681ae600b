package sqlite

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/idemsync/idemsync/contract"
)

// createFile creates the file of an SQLite target that does not exist yet,
// empty (an empty file is an empty database) and with c.FileMode() whatever
// the umask, before SQLite opens it: SQLite then creates the -wal and -shm
// files with the database file's mode. An existing file and
// sqlite::memory: are left alone. It fails with a *contract.Error
// (Permanent) when the file cannot be created.
func createFile(c contract.Conn) error {
	path, err := Path(c.URL)
	if err != nil || path == ":memory:" {
		return err
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return contract.Errorf(contract.Permanent, "create directory for %s: %w", path, err)
		}
	}
	mode := c.FileMode()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, mode)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return contract.Errorf(contract.Permanent, "create sqlite target %s: %w", path, err)
	}
	// The umask may have narrowed the mode asked for; set it exactly.
	err = f.Chmod(mode)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return contract.Errorf(contract.Permanent, "create sqlite target %s: %w", path, err)
	}
	return nil
}
