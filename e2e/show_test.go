package e2e

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// showJSON is show --json's object.
type showJSON struct {
	Job     string               `json:"job"`
	Table   string               `json:"table"`
	Columns []string             `json:"columns"`
	Rows    []map[string]*string `json:"rows"`
}

// show prints the latest rows of the job's table, newest first, on SQLite
// and PostgreSQL alike: after a first run stopped at one page and a second
// that wrote the rest, the rows of the second come first.
func TestShow(t *testing.T) {
	_, url := startAPI(t, fakeapi.Options{Records: 60}) // pages of 25
	targets := map[string]func(t *testing.T, dir string) string{
		"sqlite": func(t *testing.T, dir string) string {
			return styleJob("page", url, "sqlite:"+filepath.Join(dir, "out.db"))
		},
		"postgres": func(t *testing.T, dir string) string {
			pg := postgresURL(t)
			return pgJob("page", url, pg, freshSchema(t, pg))
		},
	}
	for name, spec := range targets {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			job := writeJob(t, dir, "job.yaml", spec(t, dir))
			if r := idemsync(t, dir, nil, "show", job); r.code != 1 || !strings.Contains(r.stderr, "run the job first") {
				t.Errorf("show before any run: exit %d, want 1 and a hint\n%s%s", r.code, r.stdout, r.stderr)
			}
			runCode(t, dir, nil, 0, "run", job, "--max-pages", "1")
			runCode(t, dir, nil, 0, "run", job)

			r := idemsync(t, dir, nil, "show", job, "--json", "--limit", "100")
			if r.code != 0 {
				t.Fatalf("show: exit %d\n%s", r.code, r.stderr)
			}
			var all showJSON
			if err := json.Unmarshal([]byte(r.stdout), &all); err != nil {
				t.Fatalf("show --json: %v\n%s", err, r.stdout)
			}
			if all.Job != "orders-page" || len(all.Rows) != 60 || all.Columns[0] != "id" || strings.Contains(strings.Join(all.Columns, ","), "_idemsync_hash") {
				t.Fatalf("show --json: job %q, %d rows, columns %v", all.Job, len(all.Rows), all.Columns)
			}
			for i, row := range all.Rows {
				id, _ := strconv.Atoi(*row["id"])
				if first := i < 35; first != (id > 25) {
					t.Errorf("row %d is id %d: the rows of the later run must come first", i, id)
				}
				if row["email"] == nil || !strings.Contains(*row["email"], "@") {
					t.Errorf("row %d: email %v", i, row["email"])
				}
			}

			r = idemsync(t, dir, nil, "show", job, "--limit", "3")
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			if r.code != 0 || len(lines) != 4 || !strings.HasPrefix(lines[0], "id ") || !strings.Contains(lines[0], "email") {
				t.Errorf("show --limit 3: exit %d, %d lines:\n%s%s", r.code, len(lines), r.stdout, r.stderr)
			}
			for _, args := range [][]string{{"--limit", "0"}, {"--resource", "other"}} {
				if r := idemsync(t, dir, nil, append([]string{"show", job}, args...)...); r.code != 2 {
					t.Errorf("show %v: exit %d, want 2\n%s", args, r.code, r.stderr)
				}
			}
			if r := idemsync(t, dir, nil, "show", job, "--resource", "orders-page", "--limit", "1"); r.code != 0 {
				t.Errorf("show --resource with the job's own name: exit %d\n%s", r.code, r.stderr)
			}
		})
	}
}
