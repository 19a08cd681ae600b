// Package openfiles tells a SQLite file that cannot be opened for want of
// permissions from one that cannot be opened because the process is out of
// file descriptors: SQLite reports both as "unable to open database file
// (14)" (docs/operations.md, "The state file").
package openfiles

import "fmt"

// OutOfDescriptors reports whether a SQLite file at path that could not be
// opened is probably not a matter of permissions but of the process's
// limit of open files: the file's folder is writable and searchable, and
// the file and its -wal and -shm files, those that exist, are readable and
// writable. It never opens the file (closing a descriptor of it would drop
// the process's SQLite locks on it). hint is what to do then.
func OutOfDescriptors(path string) (yes bool, hint string) {
	if !accessible(path) {
		return false, ""
	}
	h := "the file and its folder are writable, so this process is probably out of file descriptors: raise its open files limit"
	if n := limit(); n > 0 {
		h += fmt.Sprintf(" (ulimit -n, now %d; LimitNOFILE= in a systemd unit)", n)
	}
	return true, h
}
