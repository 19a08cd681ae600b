package e2e

import (
	"encoding/base64"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// fakeCursor is the fake API's opaque cursor meaning "after id".
func fakeCursor(id int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("id:" + strconv.Itoa(id)))
}

// fakeMark is the updated_at of record id in a fake API data set with
// distinct timestamps (record i at BaseTime + i seconds).
func fakeMark(id int) string {
	return fakeapi.DefaultBaseTime.Add(time.Duration(id) * time.Second).Format(time.RFC3339)
}

// replayPos returns, per style, the position of the page that starts after
// record `after` (pages of 25 records).
func replayPos(style, apiURL string, after int) string {
	switch style {
	case "page":
		return strconv.Itoa(after/25 + 1)
	case "offset":
		return strconv.Itoa(after)
	case "cursor", "cursor-header":
		return fakeCursor(after)
	case "cursor-url":
		return apiURL + "/cursor-url?cursor=" + fakeCursor(after) + "&limit=25"
	case "link":
		return apiURL + "/link?page=" + strconv.Itoa(after/25+1) + "&per_page=25"
	case "link-relative": // next links are relative; positions are absolute
		return apiURL + "/link?page=" + strconv.Itoa(after/25+1) + "&per_page=25&relative=1"
	case "hwm": // the mark of the page's first record, given with an offset
		return fakeapi.DefaultBaseTime.Add(time.Duration(after+1) * time.Second).In(time.FixedZone("", 2*3600)).Format(time.RFC3339)
	}
	panic(style)
}

// Rows deleted from the target come back exactly through a replay of their
// pages, for every style: --from/--to bound the pages re-read (a row
// deleted outside them stays missing), the replay is a run of kind replay
// with its own counts, and an open-ended replay reaches the end.
func TestReplayRestoresDeletedRows(t *testing.T) {
	tests := []struct {
		style    string
		path     string
		requests int // pages re-read for records 51-100
	}{
		{"page", "/page", 2},
		{"offset", "/offset", 2},
		{"cursor", "/cursor", 2},
		{"cursor-url", "/cursor-url", 2},
		{"cursor-header", "/cursor-header", 2},
		{"link", "/link", 2},
		{"link-relative", "/link", 2},
		// Marks 51, 75, 99: the page at mark 99 is the first whose
		// records go past the --to mark (100).
		{"hwm", "/hwm", 3},
	}
	for _, tt := range tests {
		t.Run(tt.style, func(t *testing.T) {
			t.Parallel()
			api, url := startAPI(t, fakeapi.Options{Records: 200, Seed: 11})
			dir := t.TempDir()
			db := filepath.Join(dir, "out.db")
			job := writeJob(t, dir, "job.yaml", styleJob(tt.style, url, "sqlite:out.db"))
			first := runCode(t, dir, nil, 0, "run", job)
			hwm := statusOf(t, dir, job).HWM

			deleteIDs(t, db, append(idRange(51, 100), 151)...)
			from, to := replayPos(tt.style, url, 50), replayPos(tt.style, url, 75)
			if tt.style == "hwm" {
				to = fakeMark(100)
			}
			api.ResetCounters()
			r := runCode(t, dir, nil, 0, "replay", job, "--from", from, "--to", to)
			if r.Kind != "replay" || r.Status != "completed" || r.RunID == first.RunID {
				t.Errorf("replay result: %+v", r)
			}
			if r.Inserted != 50 || r.Updated != 0 || r.Pages != int64(tt.requests) {
				t.Errorf("replay restored %d rows (%d updated) in %d pages, want 50 in %d: %+v", r.Inserted, r.Updated, r.Pages, tt.requests, r)
			}
			if got := api.Requests(tt.path); got != tt.requests {
				t.Errorf("replay sent %d requests, want %d", got, tt.requests)
			}
			got := readSQLite(t, db)
			if _, ok := got[151]; ok {
				t.Errorf("row 151 came back though its page is past --to")
			}
			want := sourceRows(api)
			delete(want, 151)
			assertEqualSource(t, got, want)
			if st := statusOf(t, dir, job); st.HWM != hwm {
				t.Errorf("replay moved the saved mark from %q to %q", hwm, st.HWM)
			}

			// Open-ended: from the page holding 151 to the end.
			r = runCode(t, dir, nil, 0, "replay", job, "--from", replayPos(tt.style, url, 150))
			if r.Inserted != 1 || r.Updated != 0 || r.Status != "completed" {
				t.Errorf("open-ended replay: %+v", r)
			}
			assertEqualSource(t, readSQLite(t, db), sourceRows(api))
			if st := statusOf(t, dir, job); st.HWM != hwm {
				t.Errorf("replay moved the saved mark from %q to %q", hwm, st.HWM)
			}
		})
	}
}

// A next-URL --to matches the page's URL whatever the order of its query
// parameters.
func TestReplayToURLQueryOrder(t *testing.T) {
	api, url := startAPI(t, fakeapi.Options{Records: 200})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("link", url, "sqlite:out.db"))
	runCode(t, dir, nil, 0, "run", job)
	api.ResetCounters()
	r := runCode(t, dir, nil, 0, "replay", job, "--from", url+"/link?page=3&per_page=25", "--to", url+"/link?per_page=25&page=4")
	if r.Pages != 2 || api.Requests("/link") != 2 {
		t.Errorf("replay of pages 3-4 read %d pages (%d requests): %+v", r.Pages, api.Requests("/link"), r)
	}
}

// Replaying an hwm job re-reads records whose marks lie past the saved
// mark, yet leaves the saved mark exactly where it was; the next run
// still picks those records up from the saved mark.
func TestReplayHWMKeepsSavedMark(t *testing.T) {
	api, url := startAPI(t, fakeapi.Options{Records: 120})
	dir := t.TempDir()
	db := filepath.Join(dir, "out.db")
	job := writeJob(t, dir, "job.yaml", styleJob("hwm", url, "sqlite:out.db"))
	runCode(t, dir, nil, 0, "run", job)
	before := statusOf(t, dir, job).HWM
	if before != fakeMark(120) {
		t.Fatalf("saved mark after the run %q, want %q", before, fakeMark(120))
	}
	for _, id := range []int{3, 40, 77} {
		api.Update(id, func(r *fakeapi.Record) { r.Name += " v2" }) // new marks past the saved one
	}
	deleteIDs(t, db, 10, 11)
	r := runCode(t, dir, nil, 0, "replay", job, "--from", "2024-01-01T00:00:00Z")
	if r.Inserted != 2 || r.Updated != 3 || r.HWM != before {
		t.Errorf("replay: %+v (saved mark %q)", r, before)
	}
	if after := statusOf(t, dir, job).HWM; after != before {
		t.Errorf("replay of an hwm job moved the saved mark from %q to %q", before, after)
	}
	assertEqualSource(t, readSQLite(t, db), sourceRows(api))
	// A run after the replay starts from the saved mark, not the replay's.
	api.ResetCounters()
	n := runCode(t, dir, nil, 0, "run", job)
	if n.Records != 4 || n.Unchanged != 4 || n.HWM != fakeMark(123) {
		t.Errorf("run after replay: %+v, want records 120, 3, 40, 77 unchanged and mark %s", n, fakeMark(123))
	}
}

// A replay killed mid-way is an unfinished run of kind replay: status shows
// it interrupted, and resume continues it from its last committed page,
// re-reading only a page whose rows landed without its checkpoint.
func TestReplayIsResumable(t *testing.T) {
	for _, tt := range []struct {
		failpoint string
		// the replay's counts once resumed: a page whose rows landed
		// before the kill but not its checkpoint is re-read as unchanged
		inserted, unchanged int64
	}{
		{"checkpoint-committed:2", 125, 0},
		{"target-committed:3", 100, 25},
	} {
		t.Run(tt.failpoint, func(t *testing.T) {
			t.Parallel()
			api, url := startAPI(t, fakeapi.Options{Records: 200})
			dir := t.TempDir()
			db := filepath.Join(dir, "out.db")
			job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:out.db"))
			runCode(t, dir, nil, 0, "run", job)
			deleteIDs(t, db, idRange(26, 150)...)

			api.ResetCounters()
			k := idemsync(t, dir, []string{"IDEMSYNC_TEST_FAILPOINT=" + tt.failpoint}, "replay", job, "--from", "2", "--to", "6")
			if k.code != -1 && k.code != 137 {
				t.Fatalf("replay with failpoint: exit %d, want killed: %s", k.code, k.stderr)
			}
			outliveKilledLease()
			st := statusOf(t, dir, job, "--runs", "5")
			if st.Status != "interrupted" || st.LastRun == nil || st.LastRun.Kind != "replay" || st.Checkpoint != "page 4" {
				t.Fatalf("status after the killed replay: %+v", st)
			}
			killedID := st.LastRun.RunID
			api.ResetCounters()
			r := runCode(t, dir, nil, 0, "resume", job)
			if r.Kind != "replay" || r.RunID != killedID || r.Status != "completed" {
				t.Errorf("resume did not continue the replay: %+v", r)
			}
			if r.Pages != 5 || r.Inserted != tt.inserted || r.Unchanged != tt.unchanged || r.Updated != 0 {
				t.Errorf("resumed replay counts: %+v, want 5 pages, %d inserted, %d unchanged", r, tt.inserted, tt.unchanged)
			}
			if got := api.Requests("/page"); got != 3 {
				t.Errorf("resume sent %d requests, want 3 (pages 4-6)", got)
			}
			assertEqualSource(t, readSQLite(t, db), sourceRows(api))
			if r := idemsync(t, dir, nil, "resume", job); r.code != 5 {
				t.Errorf("resume after the replay completed: exit %d, want 5", r.code)
			}
		})
	}
}

// Replay positions that do not fit the style are usage errors, before any
// request.
func TestReplayBadPositions(t *testing.T) {
	api, url := startAPI(t, fakeapi.Options{Records: 10})
	for _, tt := range []struct{ style, from, to, want string }{
		{"page", "three", "", "--from"},
		{"offset", "-5", "", "--from"},
		{"hwm", "yesterday", "", "--from"},
		{"link", "not a url", "", "--from"},
		{"page", "2", "x", "--to"},
		{"page", "5", "3", "--to 3 comes before --from 5"},
		{"offset", "50", "25", "--to 25 comes before --from 50"},
		{"hwm", "2024-01-01T00:00:10Z", "2024-01-01T00:00:09Z", "comes before"},
	} {
		dir := t.TempDir()
		job := writeJob(t, dir, "job.yaml", styleJob(tt.style, url, "sqlite:out.db"))
		args := []string{"replay", job, "--from", tt.from}
		if tt.to != "" {
			args = append(args, "--to", tt.to)
		}
		r := idemsync(t, dir, nil, args...)
		if r.code != 2 || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%s %v: exit %d, want 2 naming %q: %s", tt.style, args[2:], r.code, tt.want, r.stderr)
		}
	}
	if r := idemsync(t, t.TempDir(), nil, "replay", writeJob(t, t.TempDir(), "job.yaml", styleJob("page", url, "sqlite:out.db"))); r.code != 2 {
		t.Errorf("replay without --from: exit %d, want 2", r.code)
	}
	if n := api.TotalRequests(); n != 0 {
		t.Errorf("%d requests for invalid replays", n)
	}
}

// A continuing feed (continue: true) resumes from its last run's last page,
// not from where a replay in between stopped: replaying new pages past the
// feed's position must not make the next run skip the pages before them.
func TestReplayDoesNotMoveContinuePosition(t *testing.T) {
	for _, style := range []string{"page-continue", "continue"} {
		t.Run(style, func(t *testing.T) {
			t.Parallel()
			api, url := startAPI(t, fakeapi.Options{Records: 200})
			dir := t.TempDir()
			db := filepath.Join(dir, "out.db")
			job := writeJob(t, dir, "job.yaml", styleJob(style, url, "sqlite:out.db"))
			runCode(t, dir, nil, 0, "run", job)
			api.Add(100) // ids 201-300
			from := "11" // ids 251-275
			if style == "continue" {
				from = fakeCursor(250)
			}
			r := runCode(t, dir, nil, 0, "replay", job, "--from", from)
			if r.Inserted != 50 {
				t.Errorf("replay of the new records 251-300: %+v", r)
			}
			n := runCode(t, dir, nil, 0, "run", job)
			if n.Inserted != 50 || n.Kind != "run" {
				t.Errorf("run after the replay: %+v, want records 201-250 inserted", n)
			}
			assertEqualSource(t, readSQLite(t, db), sourceRows(api))
		})
	}
}

// A replay SIGKILLed at random moments and started again with the same
// range continues the same replay run each time (never a fresh one, never
// moving the saved mark), and restores every row.
func TestReplayCrashConvergence(t *testing.T) {
	const records, kills = 1500, 8
	for i, style := range []string{"hwm", "cursor", "offset"} {
		t.Run(style, func(t *testing.T) {
			t.Parallel()
			api, url := startAPI(t, fakeapi.Options{Records: records, Latency: 2 * time.Millisecond, Seed: int64(i)})
			dir := t.TempDir()
			db := filepath.Join(dir, "out.db")
			job := writeJob(t, dir, "job.yaml", styleJob(style, url, "sqlite:out.db"))
			first := runCode(t, dir, nil, 0, "run", job)
			hwm := statusOf(t, dir, job).HWM
			if _, err := openSQLite(t, db).Exec(`DELETE FROM orders`); err != nil {
				t.Fatal(err)
			}
			from := map[string]string{"hwm": "2024-01-01T00:00:00Z", "cursor": fakeCursor(0), "offset": "0"}[style]
			api.ResetCounters()
			seed := uint64(time.Now().UnixNano())
			rng := rand.New(rand.NewPCG(seed, 1))
			killed, done := 0, false
			for killed < kills && !done {
				c := exec.Command(binary, "replay", job, "--from", from, "--quiet")
				c.Dir, c.Env = dir, testEnv(dir, job)
				if err := c.Start(); err != nil {
					t.Fatal(err)
				}
				exited := make(chan error, 1)
				go func() { exited <- c.Wait() }()
				select {
				case err := <-exited:
					if err != nil {
						t.Fatalf("replay exited on its own with %v", err)
					}
					done = true
				case <-time.After(15*time.Millisecond + time.Duration(rng.Int64N(int64(75*time.Millisecond)))):
					_ = c.Process.Kill()
					<-exited
					killed++
					// With the state in PostgreSQL the next start would
					// otherwise find the killed holder's lease and exit 4.
					outliveKilledLease()
				}
			}
			if !done {
				// On a loaded machine a kill may land before the replay
				// recorded its run, or just after it completed: then there
				// is nothing to resume and the replay is run again.
				if r := idemsync(t, dir, nil, "resume", job); r.code == 5 {
					runCode(t, dir, nil, 0, "replay", job, "--from", from)
				} else if r.code != 0 {
					t.Fatalf("resume: exit %d: %s", r.code, r.stderr)
				}
			}
			assertEqualSource(t, readSQLite(t, db), sourceRows(api))
			// Every replay run completed: a kill never made the next
			// invocation abandon it. A second replay run only exists when
			// one completed just before its kill landed.
			if st := statusOf(t, dir, job); st.HWM != hwm {
				t.Errorf("the replays moved the saved mark from %q to %q", hwm, st.HWM)
			}
			replays := 0
			for _, r := range statusRuns(t, dir, job) {
				if r.RunID == first.RunID {
					continue
				}
				replays++
				if r.Kind != "replay" || r.Status != "completed" || r.Updated != 0 || r.Inserted+r.Unchanged != r.Records {
					t.Errorf("run %+v, want a completed replay whose records were inserted or unchanged", r)
				}
			}
			fullPass := records/24 + 2
			if bound := replays*fullPass + 2*(killed+1); api.TotalRequests() > bound {
				t.Errorf("%d requests for %d kills and %d replay runs, more than %d: a continued replay started over", api.TotalRequests(), killed, replays, bound)
			}
			t.Logf("%s (seed %d): %d kills, %d requests", style, seed, killed, api.TotalRequests())
		})
	}
}

// A replay exists to restore rows, so an empty target is what it expects:
// `resume` of an unfinished replay continues that replay over the emptied
// table instead of judging the target lost and starting a fresh run
// (docs/operations.md, "Replay").
func TestResumeContinuesReplayOverEmptyTable(t *testing.T) {
	api, url := startAPI(t, fakeapi.Options{Records: 200})
	dir := t.TempDir()
	db := filepath.Join(dir, "out.db")
	job := writeJob(t, dir, "job.yaml", styleJob("hwm", url, "sqlite:out.db"))
	first := runCode(t, dir, nil, 0, "run", job)
	if _, err := openSQLite(t, db).Exec(`DELETE FROM orders`); err != nil {
		t.Fatal(err)
	}
	api.SetFaults(fakeapi.Faults{Rate: 1, Kinds: []string{fakeapi.Fault503}})
	if r := idemsync(t, dir, nil, "replay", job, "--from", "2024-01-01T00:00:00Z"); r.code != 3 {
		t.Fatalf("replay against a failing API: exit %d, want 3: %s", r.code, r.stderr)
	}
	api.SetFaults(fakeapi.Faults{})
	r := runCode(t, dir, nil, 0, "resume", job)
	if r.Kind != "replay" || r.RunID == first.RunID || r.Inserted != 200 {
		t.Errorf("resume of the unfinished replay over an empty table: %+v, want the replay continued", r)
	}
	assertEqualSource(t, readSQLite(t, db), sourceRows(api))
}
