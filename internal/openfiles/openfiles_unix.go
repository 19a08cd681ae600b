//go:build unix

package openfiles

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

func accessible(path string) bool {
	if unix.Access(filepath.Dir(path), unix.W_OK|unix.X_OK) != nil {
		return false
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if unix.Access(p, unix.R_OK|unix.W_OK) != nil {
			return false
		}
	}
	return true
}

func limit() uint64 {
	var l unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &l) != nil {
		return 0
	}
	return l.Cur
}
