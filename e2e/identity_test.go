package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// pageJobSized is the page-style job of styleJob with another page size.
func pageJobSized(url string, size string) string {
	return strings.Replace(styleJob("page", url, "sqlite:out.db"), "  size: 25\n", "  size: "+size+"\n", 1)
}

// An unfinished run whose walk changed is never continued: page size 50 →
// 100 after 10 pages used to continue at page 11 of 100 (records
// 1001…), lose records 501…1000 and exit 0. It exits 2 naming the key;
// run --restart abandons the run and converges.
func TestIdentityChangedMidRun(t *testing.T) {
	t.Parallel()
	api, url := startAPI(t, fakeapi.Options{Records: 1000, Seed: 3})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", pageJobSized(url, "50"))
	if r := runCode(t, dir, nil, 0, "run", job, "--max-pages", "10"); r.Status != "partial" {
		t.Fatalf("first run: status %s, want partial", r.Status)
	}
	writeJob(t, dir, "job.yaml", pageJobSized(url, "100"))
	r := idemsync(t, dir, nil, "run", job)
	if r.code != 2 || !strings.Contains(r.stderr, "pagination.size: 50 → 100") {
		t.Fatalf("run with a changed page size: exit %d, want 2 naming pagination.size: 50 → 100\n%s", r.code, r.stderr)
	}
	if r := idemsync(t, dir, nil, "resume", job); r.code != 2 {
		t.Fatalf("resume with a changed page size: exit %d, want 2\n%s", r.code, r.stderr)
	}
	if got := statusOf(t, dir, job); got.LastRun == nil || got.LastRun.Pages != 10 {
		t.Fatalf("the refused run changed the checkpoint: %+v", got.LastRun)
	}
	runCode(t, dir, nil, 0, "run", job, "--restart")
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))
}

// A rotated credential header continues the run; another header that
// changed is named, and no secret value is ever printed or stored.
func TestIdentitySecretHeaderChanged(t *testing.T) {
	t.Parallel()
	_, url := startAPI(t, fakeapi.Options{Records: 200, Seed: 4})
	dir := t.TempDir()
	body := strings.Replace(styleJob("page", url, "sqlite:out.db"), "  timeout: 5s\n",
		"  timeout: 5s\n  headers: {Authorization: \"Bearer ${API_TOKEN}\"}\n", 1)
	job := writeJob(t, dir, "job.yaml", body)
	first := runCode(t, dir, []string{"API_TOKEN=first-secret-value"}, 0, "run", job, "--max-pages", "2")
	// A rotated credential is not another walk: the run continues.
	r := idemsync(t, dir, []string{"API_TOKEN=second-secret-value"}, "run", job, "--json")
	if got := parseRun(t, r); r.code != 0 || got.Status != "completed" || got.RunID != first.RunID {
		t.Fatalf("run with a rotated token: exit %d %+v, want run %d continued to completion\n%s", r.code, got, first.RunID, r.stderr)
	}
	// A header that is not a credential is part of the walk, its value
	// hidden: a changed one on an unfinished run exits 2 naming it.
	tenant := strings.Replace(body, "{Authorization:", "{X-Tenant: \"${TENANT}\", Authorization:", 1)
	writeJob(t, dir, "job.yaml", tenant)
	runCode(t, dir, []string{"API_TOKEN=second-secret-value", "TENANT=first-secret-value"}, 0, "run", job, "--restart", "--max-pages", "2")
	r = idemsync(t, dir, []string{"API_TOKEN=second-secret-value", "TENANT=second-secret-value"}, "run", job)
	if r.code != 2 || !strings.Contains(r.stderr, "source.headers.X-Tenant: changed") {
		t.Fatalf("run with a changed tenant header: exit %d, want 2 naming source.headers.X-Tenant\n%s", r.code, r.stderr)
	}
	for _, s := range []string{"first-secret-value", "second-secret-value"} {
		if strings.Contains(r.stderr+r.stdout, s) {
			t.Fatalf("output shows the secret %q:\n%s", s, r.stderr)
		}
		raw, err := os.ReadFile(filepath.Join(dir, ".idemsync", "state.db"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), s) {
			t.Fatalf("the state file holds the secret %q", s)
		}
	}
}

// Changes outside the walk (timeouts, retries, concurrency, rate limit,
// bad-record policy) never stop an unfinished run from continuing.
func TestIdentityOutsideWalk(t *testing.T) {
	t.Parallel()
	api, url := startAPI(t, fakeapi.Options{Records: 300, Seed: 6})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:out.db"))
	runCode(t, dir, nil, 0, "run", job, "--max-pages", "3")
	body := styleJob("page", url, "sqlite:out.db")
	body = strings.Replace(body, "  timeout: 5s\n", "  timeout: 7s\n  concurrency: 2\n  rate_limit: 1000\n", 1)
	body = strings.Replace(body, "  attempts: 6\n", "  attempts: 4\n", 1)
	body = strings.Replace(body, "  key: [id]\n", "  key: [id]\n  on_bad_record: skip\n", 1)
	writeJob(t, dir, "job.yaml", body)
	r := runCode(t, dir, nil, 0, "run", job, "--log-level", "debug")
	if r.Status != "completed" || r.RunID != 1 {
		t.Fatalf("run after changes outside the walk: %+v, want run 1 continued to completion", r)
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))
}

// A completed hwm job whose source changed starts again from initial, and
// says so; one whose target lost its rows does too; --restart clears the
// saved mark.
func TestIdentityCompletedStartsOver(t *testing.T) {
	t.Parallel()
	api, log, url := startLoggedAPI(t, fakeapi.Options{Records: 95, Seed: 8})
	dir := t.TempDir()
	body := styleJob("hwm", url, "sqlite:out.db")
	job := writeJob(t, dir, "job.yaml", body)
	runCode(t, dir, nil, 0, "run", job)
	log.values("since")
	if hwm := statusOf(t, dir, job).HWM; hwm == "" {
		t.Fatal("no saved mark after the first run")
	}

	// The source's query changed: a fresh start from no mark, logged.
	changed := strings.Replace(body, "  timeout: 5s\n", "  timeout: 5s\n  query: {status: any}\n", 1)
	writeJob(t, dir, "job.yaml", changed)
	r := idemsync(t, dir, nil, "run", job, "--json")
	if r.code != 0 || !strings.Contains(r.stderr, "source.query.status") {
		t.Fatalf("run after a source change: exit %d, want 0 and a log naming source.query.status\n%s", r.code, r.stderr)
	}
	if got := log.values("since"); len(got) == 0 || got[0] != "" {
		t.Fatalf("run after a source change sent since=%q first, want no mark", got)
	}
	if n := parseRun(t, r).Records; n < 95 {
		t.Fatalf("run after a source change read %d records, want all 95", n)
	}

	// The target file deleted: every record is read again.
	if err := os.Remove(filepath.Join(dir, "out.db")); err != nil {
		t.Fatal(err)
	}
	r = idemsync(t, dir, nil, "run", job, "--json")
	if r.code != 0 || !strings.Contains(r.stderr, "starting from the beginning") {
		t.Fatalf("run after the target was deleted: exit %d\n%s", r.code, r.stderr)
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))

	// Re-pointed at a new, empty target file.
	writeJob(t, dir, "job.yaml", strings.Replace(changed, "sqlite:out.db", "sqlite:other.db", 1))
	runCode(t, dir, nil, 0, "run", job)
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "other.db")), sourceRows(api))

	// --restart clears the saved mark.
	log.values("since")
	runCode(t, dir, nil, 0, "run", job, "--restart")
	if got := log.values("since"); !slices.Contains(got, "") {
		t.Fatalf("run --restart sent since=%q, want a start with no mark", got)
	}
}

// A state file written before job identities were stored adopts the
// current walk silently.
func TestIdentityAdoptedFromOlderStateFile(t *testing.T) {
	t.Parallel()
	api, url := startAPI(t, fakeapi.Options{Records: 300, Seed: 9})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", pageJobSized(url, "50"))
	runCode(t, dir, nil, 0, "run", job, "--max-pages", "2")
	db := openSQLite(t, filepath.Join(dir, ".idemsync", "state.db"))
	if _, err := db.Exec(`UPDATE jobs SET identity = NULL`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE runs SET identity = NULL`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	r := runCode(t, dir, nil, 0, "run", job)
	if r.Status != "completed" {
		t.Fatalf("continued run: %+v", r)
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))
}

// Two job files with the same name and state file but different walks:
// the second never continues the first one's run, and once that run
// completed it starts from the beginning.
func TestIdentitySameNameOtherFile(t *testing.T) {
	t.Parallel()
	api, url := startAPI(t, fakeapi.Options{Records: 300, Seed: 10})
	dir := t.TempDir()
	a := writeJob(t, dir, "a.yaml", strings.Replace(styleJob("page", url, "sqlite:out.db"), "name: orders-page", "name: orders", 1))
	b := writeJob(t, dir, "b.yaml", strings.Replace(styleJob("offset", url, "sqlite:out.db"), "name: orders-offset", "name: orders", 1))
	runCode(t, dir, nil, 0, "run", a, "--max-pages", "2")
	r := idemsync(t, dir, nil, "run", b)
	if r.code != 2 || !strings.Contains(r.stderr, "pagination.style: page → offset") {
		t.Fatalf("the other file over an unfinished run: exit %d, want 2 naming pagination.style\n%s", r.code, r.stderr)
	}
	runCode(t, dir, nil, 0, "run", a)
	r = idemsync(t, dir, nil, "run", b, "--json")
	if r.code != 0 || !strings.Contains(r.stderr, "walk changed") {
		t.Fatalf("the other file after a completed run: exit %d, want 0 and a log of the changed walk\n%s", r.code, r.stderr)
	}
	if got := parseRun(t, r); got.Records != 300 {
		t.Fatalf("the other file read %d records, want all 300", got.Records)
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))
}
