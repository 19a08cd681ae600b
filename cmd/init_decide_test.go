package cmd

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// nextIDServer serves n records as dlt's example does: {"entries": [...],
// "next_id": N, "limit": L}, the next page asked for with ?after_id=N (a
// parameter the page never names).
func nextIDServer(t *testing.T, n int) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		if limit <= 0 {
			limit = 10
		}
		from, _ := strconv.Atoi(r.URL.Query().Get("after_id"))
		from = max(from, 1)
		page := map[string]any{"limit": limit}
		entries := []map[string]any{}
		for id := from; id < from+limit && id <= n; id++ {
			entries = append(entries, map[string]any{"id": id, "value": "entry " + strconv.Itoa(id)})
		}
		page["entries"] = entries
		if from+limit <= n {
			page["next_id"] = from + limit
		}
		_ = json.NewEncoder(w).Encode(page)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// init on dlt's {"entries": [10 records], "next_id": 11, "limit": 10}
// fetched with ?limit=10 wrote style none, which validated, and run copied
// 10 of 47 rows under exit 0 (issue 27). Now the file names next_id and
// the decision left (the query parameter that takes it); validate refuses
// it with exit 2 until the user decides, and then a run copies all 47.
func TestInitLeavesTheCursorParameterToDecide(t *testing.T) {
	base := nextIDServer(t, 47)
	dir := t.TempDir()
	out := filepath.Join(dir, "entries.yaml")
	r := execute(t, false, "init", base+"/entries?limit=10", "--out", out)
	if r.code != 0 {
		t.Fatalf("init: exit %d\n%s", r.code, r.stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.stdout, "next_id") {
		t.Errorf("init's output must name the field and the decision left:\n%s", r.stdout)
	}
	v := execute(t, false, "validate", out)
	if v.code != 2 || !strings.Contains(v.stderr, "next_id") || !strings.Contains(v.stderr, "decide") {
		t.Fatalf("validate of a file with a decision left open: exit %d, want 2 naming next_id\n%s\n%s", v.code, v.stderr, data)
	}
	if run := execute(t, false, "run", out, "--quiet"); run.code != 2 {
		t.Fatalf("run of a file with a decision left open: exit %d, want 2\n%s", run.code, run.stderr)
	}
	// The user decides: after_id takes next_id.
	decided := regexp.MustCompile(`(?m)^# init could not decide.*\n#.*\ndecide:\n(  - .*\n)+`).ReplaceAllString(string(data), "")
	decided = regexp.MustCompile(`(?m)^  # param:.*$`).ReplaceAllString(decided, "  param: after_id")
	if decided == string(data) || strings.Contains(decided, "decide:") {
		t.Fatalf("the file does not have the documented decide list and commented param:\n%s", data)
	}
	if err := os.WriteFile(out, []byte(decided), 0o644); err != nil {
		t.Fatal(err)
	}
	if run := execute(t, false, "run", out, "--quiet"); run.code != 0 {
		t.Fatalf("run once decided: exit %d\n%s\n%s", run.code, run.stderr, decided)
	}
	if n := countRows(t, filepath.Join(dir, "entries.db"), "entries"); n != 47 {
		t.Errorf("the run copied %d rows, want 47", n)
	}
}
