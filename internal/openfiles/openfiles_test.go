//go:build unix

package openfiles

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file in a writable folder is not refused by its permissions: the hint
// names the descriptors and the limit. One whose folder cannot be
// searched or written (here: a path under a regular file, which no user
// can create) keeps the permissions' hint.
func TestOutOfDescriptors(t *testing.T) {
	dir := t.TempDir()
	yes, hint := OutOfDescriptors(filepath.Join(dir, "state.db"))
	if !yes || !strings.Contains(hint, "out of file descriptors") || !strings.Contains(hint, "ulimit -n, now ") {
		t.Errorf("writable folder: %v %q, want the descriptors' hint with the limit", yes, hint)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if yes, hint := OutOfDescriptors(filepath.Join(file, "state.db")); yes || hint != "" {
		t.Errorf("folder that is a file: %v %q, want no descriptors' hint", yes, hint)
	}
}
