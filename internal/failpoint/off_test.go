//go:build !failpoint

package failpoint

import (
	"testing"
	"time"
)

// The product binary is built without the tag: an armed variable must not
// kill it (this test process would die, and the test fail, if it did).
func TestHitWithoutTagIgnoresVariable(t *testing.T) {
	t.Setenv("IDEMSYNC_TEST_FAILPOINT", "fetched")
	for range 3 {
		Hit("fetched")
	}
}

// Nor does the product binary read IDEMSYNC_TEST_LOCK_WAIT: the state's
// lock waits stay the product's own.
func TestLockWaitWithoutTagIgnoresVariable(t *testing.T) {
	t.Setenv("IDEMSYNC_TEST_LOCK_WAIT", "1ms")
	if d := LockWait(10 * time.Second); d != 10*time.Second {
		t.Fatalf("LockWait(10s) = %s in a build without the failpoint tag, want 10s", d)
	}
}
