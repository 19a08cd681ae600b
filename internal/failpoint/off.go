//go:build !failpoint

package failpoint

// Hit does nothing in a build without the failpoint tag.
func Hit(string) {}
