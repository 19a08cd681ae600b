package checkpoint

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
)

// wantLocked checks that err says the job is locked (exit 4).
func wantLocked(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, contract.ErrLocked) {
		t.Fatalf("error %v, want ErrLocked", err)
	}
	if got := contract.ClassOf(err); got != contract.Locked {
		t.Errorf("exit code %d, want %d", got, contract.Locked)
	}
}

func lock(t *testing.T, s *Store, job string) func() {
	t.Helper()
	unlock, err := s.Lock(context.Background(), job)
	if err != nil {
		t.Fatalf("Lock(%s): %v", job, err)
	}
	return unlock
}

func TestLock(t *testing.T) {
	ctx := context.Background()
	path := statePath(t)
	s1 := openAt(t, path)
	s2 := openAt(t, path)

	unlock := lock(t, s1, "orders")

	// The same Store, another Store of the same file in this process: both
	// see the lock.
	for name, s := range map[string]*Store{"same store": s1, "second store": s2} {
		start := time.Now()
		_, err := s.Lock(ctx, "orders")
		wantLocked(t, err)
		if !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
			t.Errorf("%s: error %q does not name the holder", name, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: ErrLocked took %v", name, d)
		}
	}

	// Another job does not conflict.
	unlockOther := lock(t, s2, "customers")

	// Holder is visible while held, from either Store.
	host, _ := os.Hostname()
	for _, s := range []*Store{s1, s2} {
		js, err := s.Job(ctx, "orders")
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("pid %d on %s since ", os.Getpid(), host)
		if !strings.HasPrefix(js.Holder, want) {
			t.Errorf("Holder %q, want prefix %q", js.Holder, want)
		}
	}

	unlock()
	unlock() // idempotent
	js, err := s2.Job(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if js.Holder != "" {
		t.Errorf("Holder %q after unlock", js.Holder)
	}
	lock(t, s2, "orders")() // free again
	unlockOther()
}

func TestLockProbeDoesNotBlockARun(t *testing.T) {
	path := statePath(t)
	prober, runner := openAt(t, path), openAt(t, path)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				if _, err := prober.Job(context.Background(), "orders"); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	for range 50 {
		unlock, err := runner.Lock(context.Background(), "orders")
		if err != nil {
			t.Errorf("Lock while status probes: %v", err)
			break
		}
		unlock()
	}
	close(stop)
	<-done
}

func TestLockRejectsBadJobNames(t *testing.T) {
	s := openTemp(t)
	for _, job := range []string{"", "../x", "a/b", "a b", "a..b", "a.b.c", ".a", "a."} {
		_, err := s.Lock(context.Background(), job)
		wantPermanent(t, err, s.Path())
	}
}

const helperEnv = "IDEMSYNC_TEST_LOCK_HELPER"

// TestHelperProcess is not a test: run as a child by
// TestLockReleasedWhenHolderKilled, it takes the lock, says so and waits to
// be killed.
func TestHelperProcess(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		t.Skip("helper process only")
	}
	s, err := Open(context.Background(), path, nil)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	if _, err := s.Lock(context.Background(), "orders"); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("locked")
	time.Sleep(time.Minute)
	os.Exit(2) // never reached: the parent kills us
}

func TestLockReleasedWhenHolderKilled(t *testing.T) {
	ctx := context.Background()
	path := statePath(t)
	s := openAt(t, path)

	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.v=false")
	cmd.Env = append(os.Environ(), helperEnv+"="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	said := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		said <- strings.TrimSpace(line)
	}()
	select {
	case line := <-said:
		if line != "locked" {
			t.Fatalf("child said %q", line)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("child did not take the lock")
	}

	_, err = s.Lock(ctx, "orders")
	wantLocked(t, err)
	js, err := s.Job(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("pid %d on ", cmd.Process.Pid); !strings.HasPrefix(js.Holder, want) {
		t.Errorf("Holder %q, want prefix %q", js.Holder, want)
	}

	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no cleanup runs
		t.Fatal(err)
	}
	_ = cmd.Wait()

	unlock, err := s.Lock(ctx, "orders")
	if err != nil {
		t.Fatalf("Lock after the holder was killed: %v", err)
	}
	unlock()
}
