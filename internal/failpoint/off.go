//go:build !failpoint

package failpoint

import "time"

// Hit does nothing in a build without the failpoint tag.
func Hit(string) {}

// Now is the host's clock (time.Now) in a build without the failpoint tag.
func Now() time.Time { return time.Now() }

// LockWait returns d, the product's own wait, in a build without the
// failpoint tag: IDEMSYNC_TEST_LOCK_WAIT is never read.
func LockWait(d time.Duration) time.Duration { return d }
