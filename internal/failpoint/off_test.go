//go:build !failpoint

package failpoint

import "testing"

// The product binary is built without the tag: an armed variable must not
// kill it (this test process would die, and the test fail, if it did).
func TestHitWithoutTagIgnoresVariable(t *testing.T) {
	t.Setenv("IDEMSYNC_TEST_FAILPOINT", "fetched")
	for range 3 {
		Hit("fetched")
	}
}
