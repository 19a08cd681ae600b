package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	gosync "sync"
	"syscall"
	"testing"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
	"github.com/jackc/pgx/v5"
)

// modelJob returns the job file for a scenario served at apiURL.
func modelJob(sc fakeapi.Scenario, apiURL, target, table, initial string) string {
	var pag string
	switch sc.Style {
	case "page":
		pag = "  style: page\n  size_param: limit\n"
	case "page-total":
		pag = "  style: page\n  size_param: limit\n  total_pages: meta.total_pages\n"
	case "page-has-more":
		pag = "  style: page\n  size_param: limit\n  has_more: meta.has_more\n"
	case "page-count":
		pag = "  style: page\n  size_param: limit\n  total: header:X-Total-Count\n"
	case "offset":
		pag = "  style: offset\n  size_param: limit\n  has_more: has_more\n"
	case "offset-total":
		pag = "  style: offset\n  size_param: limit\n  total: total\n"
	case "cursor":
		pag = "  style: cursor\n  next: next_cursor\n  size_param: limit\n"
	case "cursor-url":
		pag = "  style: cursor\n  next_url: next\n  size_param: limit\n"
	case "cursor-header":
		pag = "  style: cursor\n  next_header: X-Next-Cursor\n  param: cursor\n  size_param: limit\n"
	case "link":
		pag = "  style: link\n  size_param: limit\n"
	case "hwm":
		pag = "  style: hwm\n  field: updated_at\n  param: since\n  size_param: limit\n"
	}
	size := fmt.Sprintf("  size: %d\n", sc.Size)
	src := ""
	if sc.Style == "none" {
		// The page size asked in the query: none has no pagination.size.
		pag, size, src = "  style: none\n", "", fmt.Sprintf("  query: {limit: %d}\n", sc.Size)
	}
	inc := ""
	if sc.Has("incremental") {
		inc = "incremental:\n  field: updated_at\n  param: since\n  initial: \"2024-01-01T00:00:00Z\"\n"
		if sc.Step > 0 {
			inc = fmt.Sprintf("incremental:\n  field: updated_at\n  param: since\n  initial: %q\n  end_param: until\n  step: %ds\n  concurrency: %d\n",
				initial, sc.Step, sc.Windows)
		}
	}
	if sc.IsHostile("boundmove") {
		// Every run a full pass, bounded above by the run's start.
		inc = "incremental:\n  field: updated_at\n  param: since\n  initial: \"2024-01-01T00:00:00Z\"\n  end_param: until\n  full_every: 1ms\n"
	}
	ver := ""
	if sc.IsHostile("gqlerrors") {
		src = "  method: POST\n  body:\n    operationName: Items\n    variables: {}\n    extensions:\n      persistedQuery: {version: 1, sha256Hash: \"3f1c0a\"}\n"
	}
	if sc.IsHostile("versionback") {
		ver = "    ver: {path: ver, type: integer}\n  version: ver\n"
	}
	return fmt.Sprintf(`name: model
source:
  url: %s/list
  records: data
  timeout: 5s
  concurrency: %d
%spagination:
%s%s%sretry:
  attempts: 6
  min_wait: 2ms
  max_wait: 20ms
target:
  url: %s
  table: %s
  key: [id]
  columns:
    id: {path: id, type: integer}
    v: {path: v, type: text}
    updated_at: {path: updated_at, type: text}
%s  deletes: %s
  max_delete_ratio: 0.9
`, apiURL, sc.Concurrency, src, pag, size, inc, target, table, ver, sc.Deletes)
}

// modelOtherJob is the sharedtable scenario's second job file: another
// source (/other) written to the same table with the same deletes.
func modelOtherJob(sc fakeapi.Scenario, apiURL, target, table string) string {
	return fmt.Sprintf(`name: other
source:
  url: %s/other
  records: data
pagination:
  style: cursor
  next: next_cursor
target:
  url: %s
  table: %s
  key: [id]
  columns:
    id: {path: id, type: integer}
    v: {path: v, type: text}
    updated_at: {path: updated_at, type: text}
  deletes: %s
  max_delete_ratio: 0.9
`, apiURL, target, table, sc.Deletes)
}

// modelExit is one finished (or killed) invocation.
type modelExit struct {
	code    int // -1 when the harness killed it
	partial bool
	stderr  string
	stdout  string // the --json output alone
}

// modelInvoke runs the binary; kill, when non-nil, is polled and the process
// is SIGKILLed as soon as it returns true.
func modelInvoke(t *testing.T, dir string, kill func() bool, args ...string) modelExit {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, binary, append(args, "--json")...)
	c.Dir = dir
	c.Env = testEnv(dir, args...)
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	var err error
	killed := false
wait:
	for {
		select {
		case err = <-done:
			break wait
		case <-time.After(time.Millisecond):
			if kill != nil && !killed && kill() {
				_ = c.Process.Signal(syscall.SIGKILL)
				killed = true
			}
		}
	}
	if killed && c.ProcessState != nil && !c.ProcessState.Exited() {
		return modelExit{code: -1, stderr: errOut.String(), stdout: out.String()}
	}
	code := 0
	if err != nil {
		if c.ProcessState == nil {
			t.Fatalf("run %v: %v", args, err)
		}
		code = c.ProcessState.ExitCode()
	}
	return modelExit{code: code, partial: strings.Contains(out.String(), `"status":"partial"`), stderr: errOut.String() + out.String(), stdout: out.String()}
}

// modelRow is one target row; deleted when soft-deleted (marked).
type modelRow struct {
	v, updatedAt string
	deleted      bool
}

// modelTarget is where a scenario's job writes and how the harness reads it.
type modelTarget struct {
	url, table string
	// read returns the target table by id and how many keys appear more
	// than once; dir is the scenario's folder.
	read func(t *testing.T, dir string) (map[int]modelRow, int)
	// edit changes row id's v by hand (model_ops_test.go, handedit).
	edit func(t *testing.T, dir string, id int, v string)
}

// modelSQLite is a target SQLite file in the scenario's folder.
func modelSQLite(t *testing.T) modelTarget {
	return modelTarget{url: "sqlite:out.db", table: "items", edit: modelSQLiteEdit, read: func(t *testing.T, dir string) (map[int]modelRow, int) {
		t.Helper()
		path := filepath.Join(dir, "out.db")
		if _, err := os.Stat(path); err != nil {
			return map[int]modelRow{}, 0
		}
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		return modelRows(t, db)
	}}
}

// modelPostgres is a table in a schema of the test's own on the server at url.
func modelPostgres(t *testing.T, url string) modelTarget {
	schema := freshSchema(t, url)
	table := schema + ".items"
	edit := func(t *testing.T, _ string, id int, v string) { modelPostgresEdit(t, url, schema, id, v) }
	return modelTarget{url: url, table: table, edit: edit, read: func(t *testing.T, _ string) (map[int]modelRow, int) {
		t.Helper()
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		out, dups := map[int]modelRow{}, 0
		q := `SELECT id, v, updated_at, ` + modelDeletedExpr + ` FROM ` + pgx.Identifier{schema, "items"}.Sanitize()
		rows, err := conn.Query(ctx, q)
		if err != nil && strings.Contains(err.Error(), "_idemsync_deleted_at") { // not a soft table
			rows, err = conn.Query(ctx, strings.Replace(q, modelDeletedExpr, "false", 1))
		}
		if err != nil {
			if strings.Contains(err.Error(), "does not exist") {
				return out, 0
			}
			t.Fatalf("read target: %v", err)
		}
		defer rows.Close()
		for rows.Next() {
			var id int
			var r modelRow
			if err := rows.Scan(&id, &r.v, &r.updatedAt, &r.deleted); err != nil {
				t.Fatal(err)
			}
			if _, ok := out[id]; ok {
				dups++
			}
			out[id] = r
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("read target: %v", err)
		}
		return out, dups
	}}
}

// modelRows reads the SQLite target table and counts keys that appear more
// than once; a table that does not exist yet is empty.
func modelRows(t *testing.T, db *sql.DB) (map[int]modelRow, int) {
	t.Helper()
	out := map[int]modelRow{}
	rows, err := db.Query(`SELECT id, v, updated_at, ` + modelDeletedExpr + ` FROM items`)
	if err != nil && strings.Contains(err.Error(), "_idemsync_deleted_at") { // not a soft table
		rows, err = db.Query(`SELECT id, v, updated_at, false FROM items`)
	}
	if err != nil {
		if strings.Contains(err.Error(), "no such table") {
			return out, 0
		}
		t.Fatalf("read target: %v", err)
	}
	defer rows.Close()
	dups := 0
	for rows.Next() {
		var id int
		var r modelRow
		if err := rows.Scan(&id, &r.v, &r.updatedAt, &r.deleted); err != nil {
			t.Fatal(err)
		}
		if _, ok := out[id]; ok {
			dups++
		}
		out[id] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read target: %v", err)
	}
	return out, dups
}

// modelDeletedExpr reads a row's soft-deletion mark as a boolean.
const modelDeletedExpr = `_idemsync_deleted_at IS NOT NULL`

// modelSwept lists the rows a completed full pass should have removed but
// did not: records known before the run began (known) that were gone
// when it began and are still gone (neither in start nor in end) must
// have no row (hard) or a marked one (soft).
func modelSwept(mode string, known map[int]bool, start, end map[int]fakeapi.ModelRecord, table map[int]modelRow) []string {
	var bad []string
	for id := range known {
		_, inStart := start[id]
		_, inEnd := end[id]
		row, ok := table[id]
		if inStart || inEnd || !ok {
			continue
		}
		if mode == "hard" || !row.deleted {
			bad = append(bad, fmt.Sprintf("id %d deleted at the source before the pass still in the table (deleted mark %v)", id, row.deleted))
		}
	}
	return bad
}

// modelAbsent counts the ids of ids in neither start nor end: the records
// modelSwept checks.
func modelAbsent(ids map[int]bool, start, end map[int]fakeapi.ModelRecord) int {
	n := 0
	for id := range ids {
		_, inStart := start[id]
		_, inEnd := end[id]
		if !inStart && !inEnd {
			n++
		}
	}
	return n
}

// modelMissing lists the records unchanged between start and end that the
// table lacks, holds with another value, or holds marked deleted.
func modelMissing(start, end map[int]fakeapi.ModelRecord, table map[int]modelRow) []string {
	var bad []string
	for id, s := range start {
		e, ok := end[id]
		if !ok || e.V != s.V {
			continue // changed or deleted during the run: no claim
		}
		got, ok := table[id]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("id %d missing", id))
		case got.deleted: // first: a marked row is wrong whatever its content
			bad = append(bad, fmt.Sprintf("id %d marked deleted but live at the source", id))
		case got.v != e.V || got.updatedAt != e.UpdatedAt:
			bad = append(bad, fmt.Sprintf("id %d stale (%s, want %s)", id, got.v, e.V))
		}
	}
	return bad
}

// modelCommitted returns the positions of the pages the latest run of the
// job committed, unless that run completed (nil then).
func modelCommitted(t *testing.T, dir string) []string {
	t.Helper()
	db := stateDB(t, dir)
	if db == nil {
		return nil
	}
	defer db.Close()
	rows, err := db.Query(`SELECT p.position FROM pages p WHERE p.run_id =
		(SELECT max(id) FROM runs WHERE job = 'model') AND
		(SELECT status FROM runs WHERE id = p.run_id) <> 'completed' ORDER BY p.seq`)
	if err != nil {
		if noStateYet(err) {
			return nil // killed while creating the state: nothing committed
		}
		t.Fatalf("read state: %v", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// modelSummary counts outcomes over all seeds of one TestModel.
type modelSummary struct {
	mu                     gosync.Mutex
	seeds, refused, failed int
	sweeps, sweptRecords   int // full passes checked for deletions, records they had to sweep
	sweepsSkipped          int // full passes whose sweep was skipped: they could not prove absence
	// checksSweeps: the model claims deletions (runModel's, not the
	// fan-out model's, which claims them table by table).
	checksSweeps bool
	exits        map[string]int
	ops          map[string]int // the operations of model_ops_test.go done
	failedSeeds  []int64
}

// op counts one operation of model_ops_test.go.
func (s *modelSummary) op(kind string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ops == nil {
		s.ops = map[string]int{}
	}
	s.ops[kind]++
}

// skippedSweep counts a completed full pass whose sweep was skipped.
func (s *modelSummary) skippedSweep() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweepsSkipped++
}

// swept counts a completed full pass checked for deletions.
func (s *modelSummary) swept(records int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweeps++
	s.sweptRecords += records
}

func (s *modelSummary) exit(code int, partial bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := fmt.Sprint(code)
	switch {
	case code == -1:
		k = "killed"
	case partial:
		k = "0-partial"
	}
	s.exits[k]++
}

// report logs the outcome counts of all seeds.
func (sum *modelSummary) report(t *testing.T) {
	keys := make([]string, 0, len(sum.exits))
	for k := range sum.exits {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var ex []string
	for _, k := range keys {
		ex = append(ex, fmt.Sprintf("%s:%d", k, sum.exits[k]))
	}
	sort.Slice(sum.failedSeeds, func(i, j int) bool { return sum.failedSeeds[i] < sum.failedSeeds[j] })
	// Deletions must happen, not only never go wrong: over enough seeds,
	// some second proving pass must have had records to remove.
	if sum.checksSweeps && sum.seeds >= 20 && sum.sweptRecords == 0 {
		t.Errorf("model: no full pass over %d seeds was checked against records deleted at the source: the sweep is never tested (or never removes)", sum.seeds)
	}
	if len(sum.ops) > 0 {
		t.Logf("model operations: %v", sum.ops)
	}
	t.Logf("model: %d seeds, exits {%s}, %d refused, %d failed %v; %d full passes with deletes checked against %d records deleted at the source, %d full passes skipped their sweep",
		sum.seeds, strings.Join(ex, " "), sum.refused, sum.failed, sum.failedSeeds, sum.sweeps, sum.sweptRecords, sum.sweepsSkipped)
}
