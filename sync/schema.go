package sync

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/infer"
	"github.com/idemsync/idemsync/jobfile/spec"
	"github.com/idemsync/idemsync/sync/paging"
)

// schemaPage is what the schema contract did to one page of a job whose
// columns are inferred (docs/job-file.md, "The schema contract").
type schemaPage struct {
	// drop is why each record target.schema discards (discard_row), by
	// its index: it goes to the dead letters, not to the table.
	drop map[int]string
	// trim is why each record written without a new field's value
	// (discard) or with a value stored as NULL (discard_value) has a dead
	// letter, by its index.
	trim map[int]string
	// kept are the dead letters of the trimmed records, written: they do
	// not count as skipped and do not void a pass's proof of absence.
	kept []contract.DeadLetter
	// changes are the columns the page added or widened.
	changes []contract.SchemaChange
	// counts of what the contract discarded on this page.
	discards contract.SchemaDiscards
}

// checkSchema applies target.schema to the records of a page before
// InferPage sees them: a new field or a value its column cannot take
// fails the page under freeze (naming the field, the record's key and
// the setting's line), and is noted in sp for the discards. The table's
// first page sets its columns whatever new_columns says. It changes
// nothing under the default contract (evolve, widen).
func (e *Engine) checkSchema(recs []gjson.Result, t *contract.Table, m *Mapper, where string) (schemaPage, error) {
	sc := e.Job.Target.Schema
	var sp schemaPage
	if sc.Evolves() && sc.Widens() {
		return sp, nil
	}
	established := len(t.Columns) > 0
	m.NoNewColumns = !sc.Evolves() && established
	m.NoWiden = !sc.Widens()
	m.NullMisfits = sc.TypeChange == spec.TypeChangeDiscardValue
	for i, r := range recs {
		if !m.keyFits(r) {
			continue // a bad record: mapping says why
		}
		var newFields, misfits []string
		if m.NoNewColumns {
			r.ForEach(func(k, v gjson.Result) bool {
				name := k.String()
				if v.Type != gjson.Null && name != "" && !strings.HasPrefix(name, "_idemsync_") && t.Column(name) == nil {
					newFields = append(newFields, name)
				}
				return true
			})
		}
		if m.NoWiden {
			for _, c := range t.Columns {
				if keyOrVersion(t, c.Name) || c.Parent != "" {
					continue
				}
				v := r.Get(c.Path)
				if _, err := Convert(v, c.Type); err != nil {
					misfits = append(misfits, fmt.Sprintf("%s (%s) cannot take %s", c.Name, c.Type, describe(v)))
				}
			}
		}
		if len(newFields) > 0 && sc.NewColumns == spec.NewColumnsFreeze {
			return sp, e.frozen(where, i, r, t, fmt.Sprintf("has field %q, which table %s has no column for", newFields[0], t),
				"target.schema.new_columns", sc.NewColumnsLine, "new_columns to evolve (add the column) or discard (store the record without the field)")
		}
		if len(misfits) > 0 && sc.TypeChange == spec.TypeChangeFreeze {
			return sp, e.frozen(where, i, r, t, "has a value of another type: column "+misfits[0],
				"target.schema.type_change", sc.TypeChangeLine, "type_change to widen (widen the column), discard_value (store NULL) or discard_row (dead-letter the record)")
		}
		if len(misfits) > 0 && sc.TypeChange == spec.TypeChangeDiscardRow {
			sp.note(&sp.drop, i, "record not stored (target.schema.type_change: discard_row): column "+strings.Join(misfits, "; column "))
			sp.discards.Rows++
			continue
		}
		var why []string
		if len(newFields) > 0 {
			why = append(why, fmt.Sprintf("new field(s) %s not stored (target.schema.new_columns: discard)", strings.Join(quoted(newFields), ", ")))
			sp.discards.NewFields++
		}
		if len(misfits) > 0 && sc.TypeChange == spec.TypeChangeDiscardValue {
			why = append(why, "value(s) stored as NULL (target.schema.type_change: discard_value): column "+strings.Join(misfits, "; column "))
			sp.discards.Values++
		}
		if len(why) > 0 {
			sp.note(&sp.trim, i, strings.Join(why, "; "))
		}
	}
	return sp, nil
}

// note sets (*m)[i] = why, making the map.
func (sp *schemaPage) note(m *map[int]string, i int, why string) {
	if *m == nil {
		*m = map[int]string{}
	}
	(*m)[i] = why
}

// frozen is the error of a page that target.schema's freeze fails: the
// page, the record and its key, what it holds, the setting and its line.
func (e *Engine) frozen(where string, i int, r gjson.Result, t *contract.Table, what, key string, line int, hint string) error {
	setting := key
	switch {
	case line > 0 && e.Job.File != "":
		setting += fmt.Sprintf(" (line %d of %s)", line, e.Job.File)
	case line > 0:
		setting += fmt.Sprintf(" (line %d)", line)
	}
	return &contract.Error{Class: contract.Permanent,
		Msg: e.Job.Secrets.Redact(fmt.Sprintf("page at %s: record %d (key %s) %s, and %s is freeze", where, i, recordKey(r, t), what, setting)),
		Hint: "nothing of the page was written and the checkpoint stays before it: set target.schema." + hint +
			", or fix the source, then run again (docs/job-file.md, \"The schema contract\")"}
}

// recordKey is the key of record r as "id=7" (several: "a=1, b=2").
func recordKey(r gjson.Result, t *contract.Table) string {
	parts := make([]string, len(t.Key))
	for i, k := range t.Key {
		path := EscapePath(k)
		if c := t.Column(k); c != nil {
			path = c.Path
		}
		parts[i] = k + "=" + paging.Elide(r.Get(path).Raw, 40)
	}
	return strings.Join(parts, ", ")
}

func quoted(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%q", n)
	}
	return out
}

// columnChanges are the schema changes from the columns before to t's
// columns after InferPage: each column added, with the type the page's
// values gave it, and each widened, with a record whose value its old
// type could not take.
func columnChanges(before []contract.Column, t *contract.Table, recs []gjson.Result, red *Redactor) []contract.SchemaChange {
	var out []contract.SchemaChange
	for _, c := range t.Columns {
		i := slices.IndexFunc(before, func(b contract.Column) bool { return b.Name == c.Name })
		switch {
		case i < 0:
			out = append(out, contract.SchemaChange{Table: t.String(), Column: c.Name, To: string(c.Type), Reason: "new field"})
		case before[i].Type != c.Type:
			reason := "a value the column could not take"
			for j, r := range recs {
				v := r.Get(c.Path)
				if _, err := Convert(v, before[i].Type); err != nil && infer.Of(v) != "" {
					reason = fmt.Sprintf("record %d (key %s) holds %s", j, recordKey(r, t), describe(v))
					break
				}
			}
			out = append(out, contract.SchemaChange{Table: t.String(), Column: c.Name, From: string(before[i].Type), To: string(c.Type),
				Reason: red.Redact(reason)})
		}
	}
	return out
}

// inferPage applies target.schema to a page's records (checkSchema), then
// adds and widens the inferred columns of m's table as it allows, from the
// records it keeps, and returns what it did.
func (e *Engine) inferPage(m *Mapper, recs []gjson.Result, where string) (schemaPage, error) {
	t := m.Table
	sp, err := e.checkSchema(recs, t, m, where)
	if err != nil {
		return sp, err
	}
	if len(sp.drop) > 0 {
		kept := make([]gjson.Result, 0, len(recs))
		for i, r := range recs {
			if _, dropped := sp.drop[i]; !dropped {
				kept = append(kept, r)
			}
		}
		recs = kept
	}
	before := slices.Clone(t.Columns)
	if m.InferPage(recs) {
		sp.changes = columnChanges(before, t, recs, e.Job.Secrets)
		for i := range sp.changes {
			sp.changes[i].Job = e.Job.Name
		}
	}
	return sp, nil
}

// schemaRun is what target.schema did in the run, for its Result: a
// continued run starts from what its pages before did (continued).
type schemaRun struct {
	changes  []contract.SchemaChange
	discards contract.SchemaDiscards
}

// continued starts sr from what the pages of run, committed before it was
// continued, changed and discarded: of the job's changes (newest first),
// run's, oldest first.
func (sr *schemaRun) continued(run *contract.RunInfo, jobChanges []contract.SchemaChange) {
	for _, c := range slices.Backward(jobChanges) {
		if c.RunID == run.ID {
			sr.changes = append(sr.changes, c)
		}
	}
	sr.discards = run.SchemaDiscards
}

// add counts the committed page pc, whose schema work was sp.
func (sr *schemaRun) add(sp schemaPage, pc *contract.PageCommit) {
	for _, c := range sp.changes {
		c.RunID, c.At = pc.RunID, time.Now().UTC()
		sr.changes = append(sr.changes, c)
	}
	sr.discards.Add(sp.discards)
}

// result is Result.SchemaChanges and Result.SchemaDiscards: nil when none.
func (sr *schemaRun) result() ([]contract.SchemaChange, *contract.SchemaDiscards) {
	var d *contract.SchemaDiscards
	if sr.discards != (contract.SchemaDiscards{}) {
		d = &sr.discards
	}
	return sr.changes, d
}
