package e2e

import (
	"bufio"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// openToPort counts the TCP connections of process pid whose remote port
// is port, from /proc/PID/net/tcp and its descriptors.
func openToPort(t *testing.T, pid int, port int) int {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/net/tcp", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	defer f.Close()
	inodes := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 10 {
			continue
		}
		_, rport, _ := strings.Cut(fs[2], ":")
		if p, err := strconv.ParseInt(rport, 16, 32); err == nil && int(p) == port {
			inodes["socket:["+fs[9]+"]"] = true
		}
	}
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name())); inodes[l] {
			n++
		}
	}
	return n
}

// A server that runs jobs for days keeps no connection of a run after it
// ended: each run's connections to its source are closed with the run
// (docs/serve.md, "Runs"). Before, every run left its keep-alive
// connections to the API open in the server until the transport's idle
// timeout (90 s), one descriptor each: a server run every second by a
// scheduler held hundreds.
func TestServeRunsLeaveNoConnections(t *testing.T) {
	_, apiURL := startAPI(t, fakeapi.Options{Records: 30})
	u, err := url.Parse(apiURL)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	dir := t.TempDir()
	jobs := filepath.Join(dir, "jobs")
	if err := os.Mkdir(jobs, 0o755); err != nil {
		t.Fatal(err)
	}
	writeJob(t, jobs, "orders.yaml", styleJob("page", apiURL, "sqlite:out.db"))
	s := startServe(t, dir, jobs, nil)
	for i := 0; i < 20; i++ {
		if code, body := s.do(t, "POST", "/jobs/orders/run", `{"full":true}`); code != 200 {
			t.Fatalf("run %d: %d %s", i, code, body)
		}
	}
	if n := openToPort(t, s.cmd.Process.Pid, port); n != 0 {
		t.Errorf("after 20 runs that ended, the server holds %d connections to the source; want none", n)
	}
}
