//go:build !failpoint

package failpoint

import "time"

// Hit does nothing in a build without the failpoint tag.
func Hit(string) {}

// Now is the host's clock (time.Now) in a build without the failpoint tag.
func Now() time.Time { return time.Now() }
