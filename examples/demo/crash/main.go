// Command demo shows idemsync surviving a crash, end to end, on a fresh
// machine with only Go: it starts the example API on 127.0.0.1, runs
// examples/orders-page.yaml into a SQLite file, kills the run with SIGKILL
// halfway, shows the status, runs again (which continues from the last
// committed page), and checks the table against the API: no duplicate, no
// missing row.
//
//	go run ./examples/demo          (says what it builds first)
//	go run ./examples/demo/crash    (this program, built silently)
package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	_ "modernc.org/sqlite"

	"github.com/idemsync/idemsync/cmd"
	"github.com/idemsync/idemsync/internal/fakeapi"
)

func main() {
	// The demo re-executes itself as the idemsync command line, so that the
	// run it kills is a real separate process.
	if os.Getenv("IDEMSYNC_DEMO_CLI") == "1" {
		os.Exit(cmd.Main())
	}
	if err := demo(); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

// killAfter is how many page requests the first run makes before the demo
// kills it: half of the job's 20 pages.
const killAfter = 10

func demo() error {
	ctx := context.Background()
	const records = 1000
	srv, err := fakeapi.Start(ctx, "127.0.0.1:0", fakeapi.Options{Records: records, Latency: 40 * time.Millisecond})
	if err != nil {
		return err
	}
	defer srv.Close()
	job, err := findJob()
	if err != nil {
		return err
	}
	out, err := os.MkdirTemp("", "idemsync-demo-")
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	env := append(os.Environ(), "IDEMSYNC_DEMO_CLI=1", "EXAMPLE_API="+srv.URL, "OUT_DIR="+out,
		"IDEMSYNC_STATE="+filepath.Join(out, "state.db"))
	idemsync := func(args ...string) *exec.Cmd {
		c := exec.Command(self, args...)
		c.Env, c.Stdout, c.Stderr = env, os.Stdout, os.Stderr
		return c
	}
	say := func(format string, args ...any) { fmt.Printf("\n==> "+format+"\n", args...) }

	say("example API with %d records on %s (40 ms per request); job %s", records, srv.URL, job)
	say("idemsync run: will be killed with SIGKILL once it has fetched %d pages", killAfter)
	c := idemsync("run", job, "--log-level", "warn")
	if err := c.Start(); err != nil {
		return err
	}
	// Counted, not timed: on a loaded machine the process may take longer
	// than any fixed delay to start, and would be killed before its first
	// page (the demo then showed a job that never ran).
	for deadline := time.Now().Add(2 * time.Minute); srv.API.TotalRequests() < killAfter && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	_ = c.Process.Kill()
	_ = c.Wait()
	fmt.Println("killed.")

	say("idemsync status: the run is unfinished, its checkpoint is the next page to fetch")
	if err := idemsync("status", job).Run(); err != nil {
		return err
	}

	say("idemsync run: continues from the checkpoint (the API saw %d requests so far)", srv.API.TotalRequests())
	if err := idemsync("run", job, "--log-level", "warn").Run(); err != nil {
		return err
	}

	say("check: the table against the API")
	if err := checkTable(filepath.Join(out, "orders.db"), records, srv.API.TotalRequests()); err != nil {
		return err
	}
	fmt.Printf("\nno duplicates, no holes. Files are in %s\n", out)
	return nil
}

// checkTable prints a sample of the demo's table and fails unless it holds
// exactly the API's records, once each; requests is how many page requests
// the API saw.
func checkTable(path string, records, requests int) error {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return err
	}
	defer db.Close()
	var rows, keys int
	if err := db.QueryRow(`SELECT count(*), count(DISTINCT id) FROM orders`).Scan(&rows, &keys); err != nil {
		return err
	}
	var sample bytes.Buffer
	r, err := db.Query(`SELECT id, email, total, updated_at FROM orders ORDER BY id LIMIT 3`)
	if err != nil {
		return err
	}
	for r.Next() {
		var id int
		var email, total, updated string
		if err := r.Scan(&id, &email, &total, &updated); err != nil {
			return err
		}
		fmt.Fprintf(&sample, "  %4d  %-20s %8s  %s\n", id, email, total, updated)
	}
	r.Close()
	fmt.Print(sample.String())
	fmt.Printf("%d rows, %d distinct ids, %d records in the API; %d page requests in all for 20 pages\n",
		rows, keys, records, requests)
	if rows != records || keys != records {
		return fmt.Errorf("table has %d rows (%d distinct ids), want %d", rows, keys, records)
	}
	return nil
}

// findJob locates examples/orders-page.yaml from the module root or from
// the examples folder.
func findJob() (string, error) {
	_, file, _, _ := runtime.Caller(0)
	for _, p := range []string{"examples/orders-page.yaml", "orders-page.yaml", "../orders-page.yaml", filepath.Join(filepath.Dir(file), "..", "..", "orders-page.yaml")} {
		if _, err := os.Stat(p); err == nil {
			return filepath.Abs(p)
		}
	}
	return "", fmt.Errorf("examples/orders-page.yaml not found: run the demo from the repository root")
}
