//go:build linux

package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// mountSmallDisk mounts a tmpfs of size bytes at a new folder for the
// test's lifetime, or skips the test when it cannot (not root, no tmpfs).
func mountSmallDisk(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a tmpfs at %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fillDisk takes every free byte of the file system holding dir into one
// file and returns its path.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "fill")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Fallocate(int(f.Fd()), 0, 0, int64(st.Bavail)*int64(st.Bsize)); err != nil {
		t.Fatalf("fill %s: %v", dir, err)
	}
	return p
}

// A SQLite target on a disk with no byte left: SQLite cannot even grow
// the target's -shm file when it opens it and says only "disk I/O error
// (4874)". The run fails with exit 1 and the error says the disk is full
// and names the target; nothing is written, the checkpoint stays, and the
// next run, the space back, converges to the source.
func TestSQLiteTargetDiskFull(t *testing.T) {
	disk := mountSmallDisk(t, "1m")
	api, url := startAPI(t, fakeapi.Options{Records: 60})
	dir := t.TempDir()
	target := filepath.Join(disk, "out.db")
	job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:"+target))
	runCode(t, dir, nil, 0, "run", job)

	fill := fillDisk(t, disk)
	r := idemsync(t, dir, nil, "run", job, "--full")
	if r.code != 1 {
		t.Fatalf("run on a full disk: exit %d, want 1\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "no space left") || !strings.Contains(r.stderr, target) {
		t.Errorf("the error does not say that the disk of %s is full:\n%s", target, r.stderr)
	}
	if st := statusOf(t, dir, job); st.Checkpoint != "page 3 (end)" {
		t.Errorf("checkpoint after the failed run %q, want the completed run's page 3 (end)", st.Checkpoint)
	}

	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
	runCode(t, dir, nil, 0, "run", job, "--full")
	assertEqualSource(t, readSQLite(t, target), sourceRows(api))
}

// The state file on a disk with no byte left: the run fails with exit 1
// before it fetches anything, the error says the disk is full and names
// the state file, and the next run, the space back, converges.
func TestStateFileDiskFull(t *testing.T) {
	disk := mountSmallDisk(t, "1m")
	api, url := startAPI(t, fakeapi.Options{Records: 60})
	dir := t.TempDir()
	state := filepath.Join(disk, "state.db")
	target := filepath.Join(dir, "out.db")
	job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:"+target))
	runCode(t, dir, nil, 0, "run", job, "--state", state)

	fill := fillDisk(t, disk)
	api.ResetCounters()
	r := idemsync(t, dir, nil, "run", job, "--full", "--state", state)
	if r.code != 1 {
		t.Fatalf("run on a full disk: exit %d, want 1\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "no space left") || !strings.Contains(r.stderr, state) {
		t.Errorf("the error does not say that the disk of %s is full:\n%s", state, r.stderr)
	}
	if n := api.Requests("/page"); n != 0 {
		t.Errorf("the failed run fetched %d pages, want none", n)
	}

	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
	runCode(t, dir, nil, 0, "run", job, "--full", "--state", state)
	assertEqualSource(t, readSQLite(t, target), sourceRows(api))
}

// The --json output going to a file on a full disk: the run's result
// cannot be written, and the command says so on stderr instead of
// leaving a caller that reads stdout with nothing and no word why; the
// run itself completed, so it still exits 0 and the state holds it.
func TestJSONOutputDiskFull(t *testing.T) {
	disk := mountSmallDisk(t, "1m")
	api, url := startAPI(t, fakeapi.Options{Records: 60})
	dir := t.TempDir()
	target := filepath.Join(dir, "out.db")
	job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:"+target))
	fillDisk(t, disk)
	out, err := os.Create(filepath.Join(disk, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	c := exec.Command(binary, "run", job, "--json", "--quiet")
	c.Dir, c.Env = dir, testEnv(dir, "run", job)
	var errOut bytes.Buffer
	c.Stdout, c.Stderr = out, &errOut
	if err := c.Run(); err != nil {
		t.Fatalf("run with its --json output on a full disk: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(errOut.String(), "--json output not written") || !strings.Contains(errOut.String(), "no space left") {
		t.Errorf("stderr does not say the --json output was lost to a full disk:\n%s", errOut.String())
	}
	if st := statusOf(t, dir, job); st.Status != "completed" {
		t.Errorf("status %q after the run, want completed", st.Status)
	}
	assertEqualSource(t, readSQLite(t, target), sourceRows(api))
}
