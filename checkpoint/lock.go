package checkpoint

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/idemsync/idemsync/contract"
)

// Lock retries for a moment before reporting ErrLocked, so that a status
// command probing the lock (it holds a shared lock for microseconds) never
// makes a starting run exit 4. A run that really holds the lock still
// fails fast.
const (
	lockTries = 5
	lockPause = 10 * time.Millisecond
)

// holderUnknown is Holder when the lock is held but nobody wrote who.
const holderUnknown = "another process"

// Lock takes the job's run lock without waiting: an OS lock held on the
// state file's identity (lock_linux.go, lock_other.go), which the kernel
// drops when the process dies, even by SIGKILL. While held, the state
// file's locks table says who holds it ("pid N on HOST since T"). Two
// Stores in one process exclude each other as two processes do.
//
// It returns an error wrapping contract.ErrLocked, naming the holder, when
// another process or Store holds the lock, and a *contract.Error (exit 1)
// when the lock cannot be taken or the file was migrated by a newer
// idemsync since this Store opened it (the lock is then not kept). unlock releases the lock; it may be
// called more than once, and Close calls it for locks still held.
func (s *Store) Lock(ctx context.Context, job string) (unlock func(), err error) {
	op := "job " + job + ": lock"
	if err := checkJob(job); err != nil {
		return nil, s.wrap(op, err)
	}
	if err := s.refuseMoved(ctx, job); err != nil {
		return nil, err
	}
	var release func() error
	for try := 1; ; try++ {
		if err := ctx.Err(); err != nil {
			return nil, s.wrap(op, err)
		}
		rel, ok, err := s.osLock(job)
		if err != nil {
			return nil, s.wrap(op, err)
		}
		if ok {
			// The file was checked when opened; a run that waited for
			// the lock may find it migrated since by a newer idemsync,
			// which may have written this job's state in a form this
			// build would misread.
			if err := s.notNewerNow(ctx); err != nil {
				if rerr := rel(); rerr != nil {
					s.log.Warn("release job lock", "job", job, "err", rerr)
				}
				return nil, s.wrap(op, err)
			}
			release = rel
			break
		}
		if try == lockTries {
			who, _ := s.holder(ctx, job)
			if who == "" {
				who = holderUnknown
			}
			return nil, &contract.Error{
				Class: contract.Locked,
				Msg:   fmt.Sprintf("job %s is locked by %s", job, who),
				Hint:  "wait for that run to finish; the lock is released when its process ends",
				Err:   contract.ErrLocked,
			}
		}
		time.Sleep(lockPause)
	}
	h := &held{job: job, release: release}
	s.mu.Lock()
	s.locks[h] = struct{}{}
	s.mu.Unlock()
	s.writeHolder(ctx, job, fmt.Sprintf("pid %d on %s since %s", os.Getpid(), hostname(), s.now().UTC().Format(time.RFC3339)))
	s.log.Debug("job lock taken", "job", job)
	var once sync.Once
	return func() {
		once.Do(func() { s.unlock(h) })
	}, nil
}

// held is a lock taken and not yet released.
type held struct {
	job     string
	release func() error
}

// unlock clears the holder text and releases h.
func (s *Store) unlock(h *held) {
	s.mu.Lock()
	_, ok := s.locks[h]
	delete(s.locks, h)
	s.mu.Unlock()
	if !ok {
		return // released by Close
	}
	s.clearHolder(h.job)
	if err := h.release(); err != nil {
		s.log.Warn("release job lock", "job", h.job, "err", err)
		return
	}
	s.log.Debug("job lock released", "job", h.job)
}

// writeHolder records who holds the job's lock. The text only informs
// status, so a failure is logged, not returned.
func (s *Store) writeHolder(ctx context.Context, job, text string) {
	err := s.noteTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO locks (job, holder, token) VALUES (?, ?, ?)
			ON CONFLICT (job) DO UPDATE SET holder = excluded.holder, token = excluded.token`, job, text, s.token)
		return err
	})
	if err != nil {
		s.log.Debug("write lock holder", "job", job, "err", err)
	}
}

// holderBusyTimeout is how long the lock's holder note waits for another
// process's write lock on the state file: the note is best effort (the
// OS lock is what excludes), so a busy state file costs the run one busy
// timeout (its first real write, exit 3), not three.
const holderBusyTimeout = time.Second

// noteTx runs fn in a transaction on a connection of its own that waits
// at most holderBusyTimeout for the write lock, then gives the connection
// back to the pool with the full busy timeout.
func (s *Store) noteTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", holderBusyTimeout.Milliseconds())); err != nil {
		return err
	}
	defer func() {
		// A connection left with the short timeout would make a page
		// commit fail early: without the reset it must not go back.
		if _, err := conn.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf("PRAGMA busy_timeout = %d", busyTimeout.Milliseconds())); err != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// clearHolder removes the holder text this Store wrote.
func (s *Store) clearHolder(job string) {
	ctx := context.Background()
	err := s.noteTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM locks WHERE job = ? AND token = ?`, job, s.token)
		return err
	})
	if err != nil {
		s.log.Debug("clear lock holder", "job", job, "err", err)
	}
}

// holder returns who holds the job's lock, or "" when nobody does. The
// probe takes no lock (on Linux) or a shared one released at once, so it
// never makes a starting run exit 4.
func (s *Store) holder(ctx context.Context, job string) (string, error) {
	locked, err := s.osHeld(job)
	if err != nil || !locked {
		return "", err
	}
	var text string
	err = s.db.QueryRowContext(ctx, `SELECT holder FROM locks WHERE job = ?`, job).Scan(&text)
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
