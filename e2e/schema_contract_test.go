package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// schemaChangeJSON is one entry of schema_changes (run --json and
// status --schema-changes --json).
type schemaChangeJSON struct {
	ID     int64  `json:"id"`
	RunID  int64  `json:"run_id"`
	Table  string `json:"table"`
	Column string `json:"column"`
	From   string `json:"from"`
	To     string `json:"to"`
	Reason string `json:"reason"`
}

// contractRun is the part of run --json that the schema contract adds.
type contractRun struct {
	Error          string             `json:"error"`
	Skipped        int64              `json:"skipped"`
	SchemaChanges  []schemaChangeJSON `json:"schema_changes"`
	SchemaDiscards *struct {
		NewFields int64 `json:"new_fields"`
		Values    int64 `json:"values"`
		Rows      int64 `json:"rows"`
	} `json:"schema_discards"`
}

// runContract runs job with --json, wants exit code, and returns the
// result object.
func runContract(t *testing.T, dir, job string, code int) contractRun {
	t.Helper()
	r := idemsync(t, dir, nil, "run", job, "--json")
	if r.code != code {
		t.Fatalf("run: exit %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout, r.stderr)
	}
	parseRun(t, r)
	var out contractRun
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// schemaChangesOf is status --schema-changes of the job, newest first.
func schemaChangesOf(t *testing.T, dir, job string) []schemaChangeJSON {
	t.Helper()
	r := idemsync(t, dir, nil, "status", job, "--schema-changes", "--json")
	var out struct {
		Jobs []struct {
			Schema []schemaChangeJSON `json:"schema_changes"`
		} `json:"jobs"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &out) != nil || len(out.Jobs) != 1 || out.Jobs[0].Schema == nil {
		t.Fatalf("status --schema-changes: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	return out.Jobs[0].Schema
}

// contractRecord is record id of the schema contract tests: id, name and
// an integer price, on pages of 10.
func contractRecord(id int) string {
	return fmt.Sprintf(`{"id":%d,"name":"n%d","price":%d}`, id, id, id+100)
}

// contractSetup serves 20 contractRecords, writes the job with the
// target.schema block schema (its first key on line 15) and runs it once:
// the first page sets the columns whatever the contract says.
func contractSetup(t *testing.T, db, schema string) (dir string, tg widenTarget, api *rawAPI, job string) {
	dir = t.TempDir()
	tg = newWidenTarget(t, db, dir)
	api = newRawAPI(20, nil)
	for id := 1; id <= 20; id++ {
		api.set(id-1, contractRecord(id))
	}
	url := serve(t, api)
	job = writeJob(t, dir, "job.yaml", widenJob(url, tg, "fail")+"  schema:\n"+schema)
	r := runContract(t, dir, job, 0)
	var added []string
	for _, c := range r.SchemaChanges {
		if c.From != "" || c.Reason != "new field" {
			t.Errorf("first run's schema change %+v, want a new field", c)
		}
		added = append(added, c.Column+":"+c.To)
	}
	if fmt.Sprint(added) != "[id:integer name:text price:integer]" {
		t.Errorf("first run's schema changes %v, want the three columns", added)
	}
	return dir, tg, api, job
}

// jobText is the job file at path.
func jobText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// wantMentions fails unless text mentions every want.
func wantMentions(t *testing.T, what, text string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%s does not mention %q:\n%s", what, w, text)
		}
	}
}

// A new field under new_columns: freeze fails its page (exit 1) naming
// the field, the record's key and the setting's line: nothing of the page
// is written, the pages before it are. Once the job allows it (evolve),
// the next run adds the column and writes the page, and the change is
// recorded.
func TestSchemaFreezeNewColumn(t *testing.T) {
	for _, db := range widenDBs {
		t.Run(db, func(t *testing.T) {
			dir, tg, api, job := contractSetup(t, db, "    new_columns: freeze\n")
			api.set(2, `{"id":3,"name":"changed3","price":103}`)
			api.set(14, `{"id":15,"name":"changed15","price":115,"tags":["a"]}`)
			r := runContract(t, dir, job, 1)
			wantMentions(t, "the error", r.Error, `field "tags"`, "key id=15", "target.schema.new_columns (line 15 of", "is freeze")
			// Again, as a person reads it: the hint says what to change.
			if text := idemsync(t, dir, nil, "run", job); text.code != 1 {
				t.Errorf("run again: exit %d, want 1", text.code)
			} else {
				wantMentions(t, "stderr", text.stderr, `error: page at page 2: record 4 (key id=15) has field "tags"`, "hint: nothing of the page was written", "target.schema.new_columns to evolve")
			}
			got := tg.read(t, "name", "price")
			if got["3"]["name"] != "changed3" || got["15"]["name"] != "n15" {
				t.Errorf("after the frozen page: row 3 %v (want page 1 written), row 15 %v (want page 2 not written)", got["3"], got["15"])
			}
			if _, has := tg.decls(t)["tags"]; has {
				t.Error("the frozen page added column tags")
			}

			writeJob(t, dir, "job.yaml", strings.Replace(jobText(t, job), "new_columns: freeze", "new_columns: evolve", 1))
			r = runContract(t, dir, job, 0)
			if len(r.SchemaChanges) != 1 || r.SchemaChanges[0].Column != "tags" || r.SchemaChanges[0].To != "json" || r.SchemaChanges[0].From != "" {
				t.Errorf("schema_changes %+v, want tags added as json", r.SchemaChanges)
			}
			got = tg.read(t, "name", "tags")
			if got["15"]["name"] != "changed15" || !strings.Contains(got["15"]["tags"], `"a"`) || len(got) != 20 {
				t.Errorf("row 15 %v (of %d rows), want it written with its tags", got["15"], len(got))
			}
			if all := schemaChangesOf(t, dir, job); len(all) != 4 || all[0].Column != "tags" || all[0].RunID == 0 {
				t.Errorf("status --schema-changes %+v, want tags newest of 4", all)
			}
		})
	}
}

// new_columns: discard writes the record without the new field, and says
// so in a dead letter; the run counts it and skips nothing.
func TestSchemaDiscardNewColumn(t *testing.T) {
	for _, db := range widenDBs {
		t.Run(db, func(t *testing.T) {
			dir, tg, api, job := contractSetup(t, db, "    new_columns: discard\n")
			api.set(14, `{"id":15,"name":"changed15","price":115,"tags":["a"]}`)
			r := runContract(t, dir, job, 0)
			if r.SchemaDiscards == nil || r.SchemaDiscards.NewFields != 1 || r.Skipped != 0 || len(r.SchemaChanges) != 0 {
				t.Errorf("run: skipped %d, schema_discards %+v, schema_changes %+v; want one record trimmed, none skipped, no change", r.Skipped, r.SchemaDiscards, r.SchemaChanges)
			}
			if got := tg.read(t, "name"); got["15"]["name"] != "changed15" {
				t.Errorf("row 15 %v, want the record written", got["15"])
			}
			if _, has := tg.decls(t)["tags"]; has {
				t.Error("discard added column tags")
			}
			st := statusOf(t, dir, job, "--dead-letters")
			if st.DeadLetters != 1 || len(st.Dead) != 1 {
				t.Fatalf("dead letters %+v, want one", st.Dead)
			}
			wantMentions(t, "the dead letter", st.Dead[0].Reason+st.Dead[0].Raw, `"tags"`, "new_columns: discard", `"changed15"`)
		})
	}
}

// type_change: a value its inferred column cannot take (79.19 in an
// integer column) under each setting.
func TestSchemaTypeChange(t *testing.T) {
	for _, db := range widenDBs {
		for _, mode := range []string{"freeze", "discard_value", "discard_row", "widen"} {
			t.Run(db+"/"+mode, func(t *testing.T) { testSchemaTypeChange(t, db, mode) })
		}
	}
}

func testSchemaTypeChange(t *testing.T, db, mode string) {
	dir, tg, api, job := contractSetup(t, db, "    type_change: "+mode+"\n")
	api.set(14, `{"id":15,"name":"changed15","price":79.19}`)
	integer, numeric := declOf(db, "integer"), declOf(db, "numeric")
	code := 0
	if mode == "freeze" {
		code = 1
	}
	r := runContract(t, dir, job, code)
	row := tg.read(t, "name", "price")["15"]
	status := statusOf(t, dir, job, "--dead-letters")
	switch mode {
	case "freeze":
		wantMentions(t, "the error", r.Error, "key id=15", "column price (integer) cannot take a number 79.19", "target.schema.type_change (line 15 of", "is freeze")
		if row["name"] != "n15" || row["price"] != "115" || tg.decls(t)["price"] != integer {
			t.Errorf("after the frozen page: row 15 %v, price %s; want nothing of page 2 written", row, tg.decls(t)["price"])
		}
		writeJob(t, dir, "job.yaml", strings.Replace(jobText(t, job), "type_change: freeze", "type_change: widen", 1))
		r = runContract(t, dir, job, 0)
		row = tg.read(t, "name", "price")["15"]
		fallthrough
	case "widen":
		if row["name"] != "changed15" || row["price"] != "79.19" || tg.decls(t)["price"] != numeric {
			t.Errorf("widened: row 15 %v, price %s; want 79.19 in a %s column", row, tg.decls(t)["price"], numeric)
		}
		if len(r.SchemaChanges) != 1 || r.SchemaChanges[0].From != "integer" || r.SchemaChanges[0].To != "numeric" ||
			!strings.Contains(r.SchemaChanges[0].Reason, "key id=15") || !strings.Contains(r.SchemaChanges[0].Reason, "79.19") {
			t.Errorf("schema_changes %+v, want price integer → numeric because of record 15", r.SchemaChanges)
		}
		if all := schemaChangesOf(t, dir, job); len(all) != 4 || all[0].Column != "price" || all[0].From != "integer" {
			t.Errorf("status --schema-changes %+v, want the widening newest of 4", all)
		}
		if status.DeadLetters != 0 && mode == "widen" {
			t.Errorf("widen made dead letters: %+v", status.Dead)
		}
	case "discard_value":
		if row["name"] != "changed15" || row["price"] != "" || tg.decls(t)["price"] != integer || r.Skipped != 0 ||
			r.SchemaDiscards == nil || r.SchemaDiscards.Values != 1 {
			t.Errorf("discard_value: row 15 %v, price %s, skipped %d, discards %+v; want the record with a NULL price", row, tg.decls(t)["price"], r.Skipped, r.SchemaDiscards)
		}
	case "discard_row":
		if row["name"] != "n15" || row["price"] != "115" || tg.decls(t)["price"] != integer || r.Skipped != 1 ||
			r.SchemaDiscards == nil || r.SchemaDiscards.Rows != 1 {
			t.Errorf("discard_row: row 15 %v, price %s, skipped %d, discards %+v; want the record dead-lettered", row, tg.decls(t)["price"], r.Skipped, r.SchemaDiscards)
		}
	}
	if strings.HasPrefix(mode, "discard") {
		if len(status.Dead) != 1 {
			t.Fatalf("dead letters %+v, want one", status.Dead)
		}
		wantMentions(t, "the dead letter", status.Dead[0].Reason+status.Dead[0].Raw, "type_change: "+mode, "price (integer) cannot take a number 79.19", `"changed15"`)
		if len(r.SchemaChanges) != 0 {
			t.Errorf("%s changed the schema: %+v", mode, r.SchemaChanges)
		}
	}
}

// A process killed after the widening page's write, before its
// checkpoint, leaves the column widened in the target: the next run
// writes the page again and records the widening once.
func TestSchemaWidenKilled(t *testing.T) {
	for _, db := range widenDBs {
		t.Run(db, func(t *testing.T) {
			dir, tg, api, job := contractSetup(t, db, "    type_change: widen\n")
			api.set(14, `{"id":15,"name":"changed15","price":79.19}`)
			k := idemsync(t, dir, []string{"IDEMSYNC_TEST_FAILPOINT=target-committed:2"}, "run", job)
			if k.code != -1 && k.code != 137 {
				t.Fatalf("run with failpoint: exit %d, want killed: %s", k.code, k.stderr)
			}
			if d := tg.decls(t)["price"]; d != declOf(db, "numeric") {
				t.Fatalf("price is %s after the killed page's write, want it widened with the page", d)
			}
			runContract(t, dir, job, 0)
			all := schemaChangesOf(t, dir, job)
			if len(all) != 4 || all[0].Column != "price" || all[0].From != "integer" || all[0].To != "numeric" {
				t.Errorf("status --schema-changes %+v, want the widening recorded once, newest of 4", all)
			}
			if row := tg.read(t, "price")["15"]; row["price"] != "79.19" {
				t.Errorf("row 15 %v", row)
			}
		})
	}
}

// validate --connect reports the schema changes the next run would make
// (a column the first page adds, one its values widen), writing nothing,
// and the run then makes exactly those.
func TestSchemaValidatePending(t *testing.T) {
	for _, db := range widenDBs {
		t.Run(db, func(t *testing.T) {
			dir, tg, api, job := contractSetup(t, db, "    type_change: widen\n")
			api.set(4, `{"id":5,"name":"n5","price":79.19,"note":"x"}`)
			r := idemsync(t, dir, nil, "validate", job, "--connect", "--json")
			var out struct {
				Pending  []schemaChangeJSON `json:"pending_schema_changes"`
				Warnings []string           `json:"warnings"`
			}
			if r.code != 0 || json.Unmarshal([]byte(r.stdout), &out) != nil {
				t.Fatalf("validate --connect: exit %d: %s %s", r.code, r.stdout, r.stderr)
			}
			got := map[string]schemaChangeJSON{}
			for _, c := range out.Pending {
				got[c.Column] = c
			}
			if p := got["price"]; len(out.Pending) != 2 || p.From != declOf(db, "integer") || p.To != "numeric" || !strings.Contains(p.Reason, "widens") {
				t.Errorf("pending %+v, want price widened from %s to numeric", out.Pending, declOf(db, "integer"))
			}
			if n := got["note"]; n.From != "" || n.To != "text" || !strings.Contains(n.Reason, "adds") {
				t.Errorf("pending %+v, want note added as text", out.Pending)
			}
			if len(out.Warnings) != 0 {
				t.Errorf("warnings %v for a small table", out.Warnings)
			}
			if d := tg.decls(t); d["price"] != declOf(db, "integer") || d["note"] != "" {
				t.Errorf("validate changed the table: %v", d)
			}
			text := idemsync(t, dir, nil, "validate", job, "--connect")
			wantMentions(t, "validate --connect", text.stdout, "pending schema changes (2):", ".price: "+declOf(db, "integer")+" → numeric", ".note: add text")

			run := runContract(t, dir, job, 0)
			if len(run.SchemaChanges) != 2 {
				t.Errorf("the run's schema_changes %+v, want the two validate reported", run.SchemaChanges)
			}
			again := idemsync(t, dir, nil, "validate", job, "--connect")
			wantMentions(t, "validate --connect after the run", again.stdout, "no pending schema change")
		})
	}
}
