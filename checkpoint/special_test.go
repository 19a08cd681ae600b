//go:build linux

package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A state path that names a named pipe or a device is refused at once,
// naming what it is: opening a pipe to read its header waited forever for
// a writer, and /dev/null read as an empty file and failed deep in SQLite
// ("disk I/O error") (docs/operations.md, "The state file").
func TestOpenSpecialFileIsNotAStateFile(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "state.db")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, tc := range []struct{ path, what string }{
		{fifo, "named pipe"},
		{os.DevNull, "device"},
	} {
		done := make(chan error, 1)
		go func() {
			_, err := Open(context.Background(), tc.path, nil)
			done <- err
		}()
		select {
		case err := <-done:
			wantPermanent(t, err, tc.path)
			if err == nil || !strings.Contains(err.Error(), tc.what) {
				t.Errorf("%s: error %v does not say it is a %s", tc.path, err, tc.what)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: Open did not return within 10 s", tc.path)
		}
	}
}
