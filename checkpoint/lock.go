package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"
	idsync "github.com/idemsync/idemsync/sync"
)

// Lock retries for a moment before reporting ErrLocked, so that a status
// command probing the lock (it holds a shared lock for microseconds) never
// makes a starting run exit 4. A run that really holds the lock still
// fails fast.
const (
	lockTries = 5
	lockPause = 10 * time.Millisecond
)

// holderUnknown is Holder when the lock is held but its text cannot be read
// (on Windows the locked byte range cannot be read by other processes).
const holderUnknown = "another process"

// lockPath returns the job's lock file: "<state file>.<job>.lock".
func (s *Store) lockPath(job string) string { return s.abs + "." + job + ".lock" }

// Lock takes the job's run lock without waiting: an OS file lock on
// "<state file>.<job>.lock" (created with mode 0600 and kept afterwards),
// which the kernel drops when the process dies, even by SIGKILL. While held,
// the file says who holds it ("pid N on HOST since T"). Two Stores in one
// process exclude each other as two processes do.
//
// It returns an error wrapping idsync.ErrLocked, naming the holder, when
// another process or Store holds the lock, and an *idsync.Error (exit 1)
// when the lock file cannot be created. unlock releases the lock; it may be
// called more than once, and Close calls it for locks still held.
func (s *Store) Lock(ctx context.Context, job string) (unlock func(), err error) {
	op := "job " + job + ": lock"
	if err := checkJob(job); err != nil {
		return nil, s.wrap(op, err)
	}
	path := s.lockPath(job)
	fl := flock.New(path, flock.SetPermissions(0o600))
	for try := 1; ; try++ {
		if err := ctx.Err(); err != nil {
			return nil, s.wrap(op, err)
		}
		ok, err := fl.TryLock()
		if err != nil {
			return nil, s.wrap(op, fmt.Errorf("lock file %s: %w", path, err))
		}
		if ok {
			break
		}
		if try == lockTries {
			who, _ := s.holder(job)
			if who == "" {
				who = holderUnknown
			}
			return nil, &idsync.Error{
				Code: idsync.ExitLocked,
				Msg:  fmt.Sprintf("job %s is locked by %s", job, who),
				Hint: "wait for that run to finish; the lock is released when its process ends",
				Err:  idsync.ErrLocked,
			}
		}
		time.Sleep(lockPause)
	}
	s.mu.Lock()
	s.locks[fl] = struct{}{}
	s.mu.Unlock()
	s.writeHolder(path, fmt.Sprintf("pid %d on %s since %s", os.Getpid(), hostname(), s.now().UTC().Format(time.RFC3339)))
	s.log.Debug("job lock taken", "job", job, "path", path)
	var once sync.Once
	return func() {
		once.Do(func() { s.unlock(job, fl) })
	}, nil
}

// unlock clears the holder text and releases fl.
func (s *Store) unlock(job string, fl *flock.Flock) {
	s.mu.Lock()
	_, held := s.locks[fl]
	delete(s.locks, fl)
	s.mu.Unlock()
	if !held {
		return // released by Close
	}
	s.writeHolder(fl.Path(), "")
	if err := fl.Unlock(); err != nil {
		s.log.Warn("release job lock", "job", job, "path", fl.Path(), "err", err)
		return
	}
	s.log.Debug("job lock released", "job", job)
}

// writeHolder replaces the lock file's text. The text only informs status,
// so a failure is logged, not returned.
func (s *Store) writeHolder(path, text string) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err == nil {
		err = f.Truncate(0)
		if err == nil && text != "" {
			_, err = f.WriteString(text + "\n")
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		s.log.Debug("write lock holder", "path", path, "err", err)
	}
}

// holder returns who holds the job's lock, or "" when nobody does. It
// probes with a shared lock, released at once, which fails exactly when a
// run holds the exclusive one; it never creates the lock file.
func (s *Store) holder(job string) (string, error) {
	path := s.lockPath(job)
	fl := flock.New(path, flock.SetFlag(os.O_RDONLY))
	ok, err := fl.TryRLock()
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("lock file %s: %w", path, err)
	}
	if ok {
		if err := fl.Unlock(); err != nil {
			return "", fmt.Errorf("lock file %s: %w", path, err)
		}
		return "", nil
	}
	f, err := os.Open(path)
	if err != nil {
		return holderUnknown, nil
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 512))
	text := strings.TrimSpace(string(b))
	if err != nil || text == "" {
		return holderUnknown, nil
	}
	return text, nil
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "unknown host"
	}
	return h
}
