package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

type bench struct {
	bin string
	dir string
	n   int
	// profiles, when set, is the folder each measured run writes its CPU
	// profile to (NAME.pprof; -cpuprofile).
	profiles string
}

// command returns the command running the binary with args for the run
// called name, under a CPU profile when b.profiles is set.
func (b *bench) command(name string, args ...string) *exec.Cmd {
	c := exec.Command(b.bin, args...)
	if b.profiles != "" {
		c.Env = append(os.Environ(), "IDEMSYNC_CPUPROFILE="+filepath.Join(b.profiles, name+".pprof"))
	}
	return c
}

// cpuOf is the CPU time (user + system) a finished command used.
func cpuOf(c *exec.Cmd) time.Duration {
	if c.ProcessState == nil {
		return 0
	}
	return c.ProcessState.UserTime() + c.ProcessState.SystemTime()
}

// measured is one idemsync run.
type measured struct {
	wall    time.Duration
	cpu     time.Duration // user + system CPU of the idemsync process
	rss     int64         // peak resident set, bytes (0 when the OS does not say)
	written int64         // rows inserted or updated
	pages   int64
	stdout  []byte // the --json object
}

type row struct {
	name    string
	wall    time.Duration
	cpu     time.Duration // 0: not measured
	rss     int64
	written int64
}

const columns = `  columns:
    id: {path: id, type: integer}
    name: name
    email: customer.email
    total: {path: total, type: numeric}
    active: {path: active, type: boolean}
    updated_at: {path: updated_at, type: timestamp}
    tags: {path: tags, type: json}
`

func pageJob(api *fakeapi.Server, size, concurrency int, target string) string {
	return fmt.Sprintf(`name: bench
source:
  url: %s/page
  records: data
  concurrency: %d
pagination:
  style: page
  size_param: per_page
  size: %d
target:
  url: %s
  table: orders
  key: [id]
%s`, api.URL, concurrency, size, target, columns)
}

func cursorJob(api *fakeapi.Server, size int, target string) string {
	return fmt.Sprintf(`name: bench
source:
  url: %s/cursor
  records: data
pagination:
  style: cursor
  next: next_cursor
  size_param: limit
  size: %d
target:
  url: %s
  table: orders
  key: [id]
%s`, api.URL, size, target, columns)
}

// idemsync runs the binary on a job file with a fresh state file and
// returns its wall time, peak RSS and counts.
func (b *bench) idemsync(name, job string) (measured, error) {
	b.n++
	dir := filepath.Join(b.dir, fmt.Sprintf("%02d-%s", b.n, name))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return measured{}, err
	}
	jobFile := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(jobFile, []byte(job), 0o600); err != nil {
		return measured{}, err
	}
	c := b.command(name, "run", jobFile, "--json", "--quiet", "--state", filepath.Join(b.dir, name+".state.db"))
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	t0 := time.Now()
	if err := c.Start(); err != nil {
		return measured{}, err
	}
	peak := watchPeakRSS(c.Process.Pid)
	err := c.Wait()
	wall := time.Since(t0)
	rss := peak()
	if err != nil {
		return measured{}, fmt.Errorf("%s: %v: %s%s", name, err, out.String(), errOut.String())
	}
	var res struct {
		Pages    int64 `json:"pages"`
		Inserted int64 `json:"inserted"`
		Updated  int64 `json:"updated"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return measured{}, fmt.Errorf("%s: %v: %s", name, err, out.String())
	}
	return measured{wall: wall, cpu: cpuOf(c), rss: rss, written: res.Inserted + res.Updated, pages: res.Pages, stdout: out.Bytes()}, nil
}

func (b *bench) table(records int, rows []row) {
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "what\tseconds\trecords/s\tCPU µs/record\trows written\tpeak RSS MiB\t")
	for _, r := range rows {
		rss := "-"
		if r.rss > 0 {
			rss = fmt.Sprintf("%.1f", float64(r.rss)/(1<<20))
		}
		written := "-"
		if r.name != "" && r.rss > 0 {
			written = fmt.Sprint(r.written)
		}
		cpu := "-"
		if r.cpu > 0 {
			cpu = fmt.Sprintf("%.2f", float64(r.cpu.Microseconds())/float64(records))
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%.0f\t%s\t%s\t%s\t\n", r.name, r.wall.Seconds(), float64(records)/r.wall.Seconds(), cpu, written, rss)
	}
	tw.Flush()
}

// latency measures a latency-bound API: page style at concurrency 1, 4 and
// 8, and the cursor style pipelined against max(fetch, write) per page.
func (b *bench) latency(pages, size int, latency time.Duration, quick bool) error {
	records := pages * size
	fmt.Printf("\n## latency: %d pages of %d records, %s per request\n", pages, size, latency)
	api, stop, err := serve(records, latency)
	if err != nil {
		return err
	}
	defer stop()
	var rows []row
	walls := map[int]time.Duration{}
	for _, c := range []int{1, 4, 8} {
		m, err := b.idemsync(fmt.Sprintf("lat-c%d", c), pageJob(api, size, c, "sqlite:"+filepath.Join(b.dir, fmt.Sprintf("lat-c%d.db", c))))
		if err != nil {
			return err
		}
		walls[c] = m.wall
		rows = append(rows, row{fmt.Sprintf("page style, concurrency %d", c), m.wall, m.cpu, m.rss, m.written})
	}
	cur, err := b.idemsync("lat-cursor", cursorJob(api, size, "sqlite:"+filepath.Join(b.dir, "lat-cursor.db")))
	if err != nil {
		return err
	}
	rows = append(rows, row{"cursor style, pipelined", cur.wall, cur.cpu, cur.rss, cur.written})
	b.table(records, rows)
	fmt.Printf("ratio: concurrency 8 is %.1fx faster than concurrency 1 (goal >= 6x); concurrency 4: %.1fx\n",
		walls[1].Seconds()/walls[8].Seconds(), walls[1].Seconds()/walls[4].Seconds())

	// max(fetch, write) per page: fetch alone with the same latency, and
	// write alone (the same pages with no latency, written by idemsync).
	fetch, err := fetchOnly(api, "/cursor", pages, size)
	if err != nil {
		return err
	}
	api.API.SetLatency(0)
	w, err := b.idemsync("lat-write", cursorJob(api, size, "sqlite:"+filepath.Join(b.dir, "lat-write.db")))
	if err != nil {
		return err
	}
	perFetch, perWrite := fetch/time.Duration(pages), w.wall/time.Duration(pages+1)
	perPage := cur.wall / time.Duration(pages+1)
	ceil := max(perFetch, perWrite)
	fmt.Printf("cursor pipelined: %.1f ms a page; fetch alone %.1f ms, fetch+write with no latency %.1f ms; %.0f%% above max(fetch, write) (goal <= 15%%)\n",
		ms(perPage), ms(perFetch), ms(perWrite), 100*(perPage.Seconds()/ceil.Seconds()-1))
	return nil
}

// memory runs idemsync at two data sizes and compares peak RSS.
func (b *bench) memory(small, big, size int) error {
	fmt.Printf("\n## peak memory, pages of %d\n", size)
	var rss [2]int64
	for i, n := range []int{small, big} {
		api, stop, err := serve(n, 0)
		if err != nil {
			return err
		}
		m, err := b.idemsync(fmt.Sprintf("mem-%d", n), pageJob(api, size, 1, "sqlite:"+filepath.Join(b.dir, fmt.Sprintf("mem-%d.db", n))))
		stop()
		if err != nil {
			return err
		}
		rss[i] = m.rss
		fmt.Printf("%d records: %.2f s, peak RSS %.1f MiB\n", n, m.wall.Seconds(), float64(m.rss)/(1<<20))
	}
	if rss[0] > 0 {
		fmt.Printf("ratio: peak RSS at %d records is %.2fx that at %d (goal <= 1.25x, and < 100 MiB)\n",
			big, float64(rss[1])/float64(rss[0]), small)
	}
	return nil
}

// watchPeakRSS samples the process's VmHWM (its peak resident set) from
// /proc every 5 ms until the returned function is called after Wait, and
// returns the last value seen, in bytes; 0 where /proc does not exist.
// (The rusage of a child is no use here: Go starts children with vfork, so
// their ru_maxrss includes this process's own memory.)
func watchPeakRSS(pid int) func() int64 {
	var peak atomic.Int64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		path := fmt.Sprintf("/proc/%d/status", pid)
		for {
			if b, err := os.ReadFile(path); err == nil {
				for _, line := range strings.Split(string(b), "\n") {
					if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
						kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
						if kb*1024 > peak.Load() {
							peak.Store(kb * 1024)
						}
					}
				}
			}
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return func() int64 {
		close(done)
		<-stopped
		return peak.Load()
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
