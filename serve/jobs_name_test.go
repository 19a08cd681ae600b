package serve

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A job's name is at most 128 characters, letters or digits first; the
// bound is checked apart from the pattern (a bounded repeat in the regexp
// cost every idemsync process milliseconds of package init).
func TestJobNameBounds(t *testing.T) {
	dir := t.TempDir()
	f := &folder{root: dir}
	longest := "a" + strings.Repeat("b", 127)
	if err := os.WriteFile(filepath.Join(dir, longest+".yaml"), []byte("name: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.resolve(longest); err != nil {
		t.Errorf("128-character name: %v", err)
	}
	for _, name := range []string{longest + "c", "-a", ".a", "_a", "a/b", "a b", "é"} {
		if _, err := f.resolve(name); !errors.Is(err, errNoJob) || !strings.Contains(err.Error(), "named by its file name") {
			t.Errorf("resolve(%q) = %v, want the name refused", name, err)
		}
	}
}
