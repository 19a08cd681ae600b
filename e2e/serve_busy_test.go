package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// A run request that finds the job's run going in this server is answered
// 409 with the job's status, whose last_run is the run in progress
// (docs/serve.md, "Runs"), also when it comes while that run is still
// starting: here its target is held by another writer, so the run has
// its lock but has not yet recorded its run. The answer waits until it
// has, instead of reporting the previous run, completed, as the job's last.
func TestServeBusyAnswerShowsTheRunInProgress(t *testing.T) {
	_, apiURL := startAPI(t, fakeapi.Options{Records: 60})
	dir := t.TempDir()
	jobs := filepath.Join(dir, "jobs")
	if err := os.Mkdir(jobs, 0o755); err != nil {
		t.Fatal(err)
	}
	writeJob(t, jobs, "orders.yaml", styleJob("page", apiURL, "sqlite:out.db"))
	s := startServe(t, dir, jobs, nil)
	code, body := s.do(t, "POST", "/jobs/orders/run", "")
	prev := parseRun(t, result{stdout: body})
	if code != 200 || prev.Status != "completed" {
		t.Fatalf("first run: %d %s", code, body)
	}

	// Another writer holds the target: the next run waits to open it.
	db := openSQLite(t, filepath.Join(jobs, "out.db"))
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	first := s.runAsync(t, "orders")
	deadline := time.Now().Add(20 * time.Second)
	for s.jobStatus(t, "orders").Status != "running" {
		if time.Now().After(deadline) {
			t.Fatal("the second run never took its lock")
		}
		time.Sleep(10 * time.Millisecond)
	}
	busy := make(chan serveRun, 1)
	go func() {
		code, body := s.do(t, "POST", "/jobs/orders/run", "")
		busy <- serveRun{code, body}
	}()
	time.Sleep(300 * time.Millisecond) // the busy request is in
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	got := <-busy
	var reply struct {
		Status    string
		JobStatus struct{ Jobs []jobStatusJSON } `json:"job_status"`
	}
	if err := json.Unmarshal([]byte(got.body), &reply); err != nil || got.code != 409 || reply.Status != "locked" ||
		len(reply.JobStatus.Jobs) != 1 || reply.JobStatus.Jobs[0].LastRun == nil {
		t.Fatalf("a run request during a starting run: %d %s", got.code, got.body)
	}
	last := reply.JobStatus.Jobs[0].LastRun
	if reply.JobStatus.Jobs[0].Status != "running" || last.Status != "running" || last.RunID == prev.RunID {
		t.Errorf("the 409's job_status: status %s, last_run %d %s; want the run in progress, not run %d",
			reply.JobStatus.Jobs[0].Status, last.RunID, last.Status, prev.RunID)
	}
	if r := <-first; r.code != 200 {
		t.Errorf("the run: %d %s", r.code, r.body)
	}
}

// A job file reached by another name that is the same file (a hard link;
// on a case-insensitive file system, the name in another case) is the
// same job file to the server: a run request by that name while the job
// runs is answered as one by the run's own name, 409 with the run in
// progress in job_status, not with the state lock's bare refusal
// (docs/serve.md, "Runs").
func TestServeBusyAnswerByAnotherNameOfTheFile(t *testing.T) {
	api, apiURL := startAPI(t, fakeapi.Options{Records: 600, Latency: 20 * time.Millisecond})
	dir := t.TempDir()
	jobs := filepath.Join(dir, "jobs")
	if err := os.Mkdir(jobs, 0o755); err != nil {
		t.Fatal(err)
	}
	orders := writeJob(t, jobs, "orders.yaml", styleJob("page", apiURL, "sqlite:out.db"))
	if err := os.Link(orders, filepath.Join(jobs, "hard.yaml")); err != nil {
		t.Skipf("no hard link: %v", err)
	}
	s := startServe(t, dir, jobs, nil)
	first := s.runAsync(t, "orders")
	deadline := time.Now().Add(20 * time.Second)
	for st := s.jobStatus(t, "orders"); st.Status != "running" || st.LastRun == nil; st = s.jobStatus(t, "orders") {
		if time.Now().After(deadline) {
			t.Fatal("the run never showed running")
		}
		time.Sleep(10 * time.Millisecond)
	}
	code, body := s.do(t, "POST", "/jobs/hard/run", "")
	var reply struct {
		Status    string
		ExitCode  int                            `json:"exit_code"`
		JobStatus struct{ Jobs []jobStatusJSON } `json:"job_status"`
	}
	if err := json.Unmarshal([]byte(body), &reply); err != nil || code != 409 || reply.Status != "locked" || reply.ExitCode != 4 ||
		len(reply.JobStatus.Jobs) != 1 || reply.JobStatus.Jobs[0].Status != "running" {
		t.Errorf("a run request by the hard link's name during the run: %d %s; want 409 locked with the run in job_status", code, body)
	}
	api.SetLatency(0)
	if r := <-first; r.code != 200 || !strings.Contains(r.body, `"status":"completed"`) {
		t.Errorf("the run: %d %s", r.code, r.body)
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(jobs, "out.db")), sourceRows(api))
}
