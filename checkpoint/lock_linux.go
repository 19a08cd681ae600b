//go:build linux

package checkpoint

import (
	"fmt"
	"hash/fnv"

	"golang.org/x/sys/unix"
)

// On Linux the run lock is an open-file-description (OFD) byte-range lock
// on the state file itself, at one byte per job far above SQLite's own lock
// bytes (around 1 GiB). It follows the file's identity: the same file
// reached through a symlink, a hard link or another path is the same lock,
// and deleting any other file cannot release it. An unlock releases it,
// never the closing of a descriptor (fd.go), and the kernel drops it when
// the process dies, SIGKILL included. Probing
// with F_OFD_GETLK takes nothing, so status never makes a starting run
// exit 4.

// lockBase is where the jobs' lock bytes start: far above SQLite's lock
// bytes and below the largest file offset.
const lockBase = int64(1) << 62

// lockByte returns the byte of the state file that stands for job.
func lockByte(job string) int64 {
	h := fnv.New64a()
	h.Write([]byte(job))
	return lockBase + int64(h.Sum64()&(1<<60-1))
}

// osLock takes the job's lock without waiting. It returns ok false when
// another open description of the file holds it. The description is one
// of the state file's own (fd.go): releasing the lock unlocks it and keeps
// it open, since closing it would drop SQLite's locks on the file.
func (s *Store) osLock(job string) (release func() error, ok bool, err error) {
	f, err := s.file.takeDescriptor(s.abs)
	if err != nil {
		return nil, false, fmt.Errorf("open state file for its lock: %w", err)
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: lockByte(job), Len: 1}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk); err != nil {
		s.file.giveBack(f, true)
		if err == unix.EAGAIN || err == unix.EACCES {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("lock state file: %w", err)
	}
	return func() error {
		lk.Type = unix.F_UNLCK
		if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk); err != nil {
			s.file.giveBack(f, false) // still locked: closed with the file
			return fmt.Errorf("unlock state file: %w", err)
		}
		s.file.giveBack(f, true)
		return nil
	}, true, nil
}

// osHeld reports whether some open description of the state file holds
// the job's lock. It takes no lock.
func (s *Store) osHeld(job string) (bool, error) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: lockByte(job), Len: 1}
	if err := unix.FcntlFlock(s.file.f.Fd(), unix.F_OFD_GETLK, &lk); err != nil {
		return false, fmt.Errorf("probe state file lock: %w", err)
	}
	return lk.Type != unix.F_UNLCK, nil
}
