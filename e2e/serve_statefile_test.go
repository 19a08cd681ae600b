package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// A state file removed, or replaced by a backup moved over it, while the
// server runs a job is not written to as if it were still the job's state:
// the run's next page finds that the path names another file (or none)
// and the run fails naming the state file, instead of recording its pages
// and its completion in the unlinked file and answering 200 completed
// while the state at the path (what status, the next run and a CLI run
// read) knows nothing of it. The next run request works on the file now
// at the path (docs/operations.md, "The state file").
func TestServeStateFileReplacedDuringRun(t *testing.T) {
	for _, how := range []string{"removed", "backup moved over it"} {
		t.Run(how, func(t *testing.T) {
			api, apiURL := startAPI(t, fakeapi.Options{Records: 600})
			dir := t.TempDir()
			jobs := filepath.Join(dir, "jobs")
			if err := os.Mkdir(jobs, 0o755); err != nil {
				t.Fatal(err)
			}
			writeJob(t, jobs, "orders.yaml", styleJob("page", apiURL, "sqlite:out.db"))
			s := startServe(t, dir, jobs, nil)
			if code, body := s.do(t, "POST", "/jobs/orders/run", ""); code != 200 {
				t.Fatalf("first run: %d %s", code, body)
			}
			state := filepath.Join(jobs, ".idemsync", "state.db")
			backup := filepath.Join(dir, "backup.db")
			db := openSQLite(t, state)
			if _, err := db.Exec(`VACUUM INTO ?`, backup); err != nil {
				t.Fatal(err)
			}
			db.Close()

			api.SetLatency(40 * time.Millisecond)
			run := s.runAsync(t, "orders")
			deadline := time.Now().Add(20 * time.Second)
			for st := s.jobStatus(t, "orders"); st.Status != "running" || st.LastRun == nil || st.LastRun.Pages < 2; st = s.jobStatus(t, "orders") {
				if time.Now().After(deadline) {
					t.Fatal("the run never showed two pages")
				}
				time.Sleep(10 * time.Millisecond)
			}
			for _, suffix := range []string{"-wal", "-shm"} {
				if err := os.Remove(state + suffix); err != nil {
					t.Fatal(err)
				}
			}
			if how == "removed" {
				err := os.Remove(state)
				if err != nil {
					t.Fatal(err)
				}
			} else if err := os.Rename(backup, state); err != nil {
				t.Fatal(err)
			}
			got := <-run
			t.Logf("the run: %d %s", got.code, got.body)
			var reply struct {
				Status   string
				ExitCode int `json:"exit_code"`
				Error    string
			}
			if err := json.Unmarshal([]byte(got.body), &reply); err != nil {
				t.Fatalf("reply: %v: %s", err, got.body)
			}
			if got.code != 500 || reply.ExitCode != 1 || !strings.Contains(reply.Error, state) || !strings.Contains(reply.Error, "replaced") {
				t.Errorf("the run whose state file was %s: %d %s; want 500, exit 1, naming the state file", how, got.code, got.body)
			}
			api.SetLatency(0)
			code, body := s.do(t, "POST", "/jobs/orders/run", "")
			if code != 200 || !strings.Contains(body, `"status":"completed"`) {
				t.Fatalf("the next run: %d %s", code, body)
			}
			if st := s.jobStatus(t, "orders"); st.LastRun == nil || st.LastRun.Status != "completed" {
				t.Errorf("status after the next run: %+v", st)
			}
		})
	}
}
