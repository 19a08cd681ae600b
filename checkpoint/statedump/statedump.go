// Package statedump is the state as JSON, the same whichever store kept
// it (docs/operations.md, "Moving a job between hosts"): what `idemsync
// state export` prints, `state import` reads and `state migrate` copies
// and compares. Each store (checkpoint, checkpoint/pgstate) reads and
// writes its tables through the one table list here, converting each
// column's value to and from the canonical form of its Kind.
package statedump

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"
)

// Format is the version of the dump's layout.
const Format = 1

// Kind is how a column's value is kept in a dump.
type Kind int

const (
	Text   Kind = iota // a string
	NText              // a string or null
	Int                // an integer
	NInt               // an integer or null
	Bool               // true or false
	Time               // RFC 3339 in UTC, to the microsecond
	NTime              // a time or null
	Bytes              // base64
	NBytes             // base64 or null
)

// Column is one column: its name in the dump and in PostgreSQL, and in the
// SQLite state file when it differs.
type Column struct {
	Name   string
	SQLite string
	Kind   Kind
	// SQLiteText: the SQLite file keeps the column as TEXT (bytes as a
	// string; a missing time as '').
	SQLiteText bool
	// Absent is the value of a column that a row of an earlier version's
	// dump lacks (nil: none, the row's value is null).
	Absent any
}

// SQLiteName is the column's name in the SQLite state file.
func (c Column) SQLiteName() string {
	if c.SQLite != "" {
		return c.SQLite
	}
	return c.Name
}

// Table is one table of the state. Secret: it holds refresh tokens, which
// move only when asked. Key orders its rows.
type Table struct {
	Name    string
	Columns []Column
	Key     string
	Secret  bool
}

func cols(kind Kind, names ...string) []Column {
	out := make([]Column, len(names))
	for i, n := range names {
		out[i] = Column{Name: n, Kind: kind}
	}
	return out
}

func join(parts ...[]Column) []Column {
	var out []Column
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// Tables are the tables a dump holds, in the order they are loaded
// (a run after its job, a page after its run). The run lock (leases,
// locks), the schema's versions and the state's identity stay with each
// store.
var Tables = []Table{
	{Name: "jobs", Key: "name", Columns: join(cols(Text, "name", "hwm"), cols(NText, "columns_json", "identity"),
		cols(NTime, "full_pass_at"), cols(Bool, "full_due"), cols(Time, "created_at", "updated_at"),
		// The target's progress marker (docs/guarantees.md, "Progress
		// markers"): 0, none recorded, from a dump written before it moved.
		[]Column{{Name: "target_marker", Kind: Int, Absent: int64(0)}})},
	{Name: "runs", Key: "id", Columns: join(cols(Int, "id"), cols(Text, "job"), cols(Int, "number"), cols(Text, "kind", "status"),
		cols(Time, "started_at"), cols(NTime, "finished_at"),
		cols(Int, "pages", "records", "inserted", "updated", "unchanged", "skipped", "deleted"),
		cols(Text, "checkpoint", "last_pos", "window_mark", "max_mark", "from_pos", "to_pos", "error", "owner"),
		cols(NText, "identity"), []Column{{Name: "full_pass", SQLite: "full", Kind: Bool}}, cols(Text, "sweep_skipped"),
		cols(NInt, "live_before"), cols(NTime, "refused_since"), cols(Bool, "swept"), cols(Int, "pending_deletes"))},
	{Name: "pages", Key: "run_id, seq", Columns: join(cols(Int, "run_id", "seq"), cols(Text, "position", "next"), cols(Int, "records"),
		cols(Text, "hash"), cols(Time, "committed_at"), cols(Int, "elapsed_ms"), cols(NBytes, "keys"))},
	{Name: "run_children", Key: "run_id, tbl", Columns: join(cols(Int, "run_id"), cols(Text, "tbl"), cols(Int, "inserted", "deleted"))},
	{Name: "run_schema_discards", Key: "run_id", Columns: cols(Int, "run_id", "new_fields", "nulled_values", "dropped_rows")},
	{Name: "dead_letters", Key: "id", Columns: join(cols(Int, "id"), cols(Text, "job"), cols(Int, "run_id"), cols(Text, "position"),
		cols(Int, "idx"), cols(Text, "reason"), []Column{{Name: "raw", Kind: Bytes, SQLiteText: true}}, cols(Time, "at"))},
	{Name: "schema_changes", Key: "id", Columns: join(cols(Int, "id"), cols(Text, "job"), cols(Int, "run_id"),
		cols(Text, "tbl", "col", "from_type", "to_type", "reason"), cols(Time, "at"))},
	{Name: "metrics_totals", Key: "job, resource", Columns: join(cols(Text, "job", "resource"),
		cols(Int, "pages", "inserted", "updated", "unchanged", "skipped", "deleted", "sweeps_skipped"),
		[]Column{{Name: "last_run_at", Kind: NTime, SQLiteText: true}}, cols(NTime, "last_success_at"), cols(Int, "last_duration_ms", "last_exit_code"))},
	{Name: "job_cycles", Key: "name", Columns: join(cols(Text, "name"), cols(Time, "started_at"))},
	{Name: "auth_credentials", Key: "job, credential", Secret: true, Columns: join(cols(Text, "job", "credential", "seed_hash", "token"),
		cols(Bool, "pending"), cols(Time, "updated_at"))},
	{Name: "run_keys", Key: "job, key", Columns: join(cols(Text, "job", "key", "result"), cols(Time, "at"))},
}

// Row is one row: column name to canonical value (string, int64, bool,
// nil; times and bytes as strings).
type Row map[string]any

// Dump is a whole state.
type Dump struct {
	Format int `json:"format"`
	// Tokens: the refresh tokens are in it (auth_credentials).
	Tokens bool             `json:"tokens"`
	Tables map[string][]Row `json:"tables"`
}

// Porter is a state store that exports and imports dumps.
type Porter interface {
	// Export reads the whole state in one snapshot; with tokens the
	// refresh tokens too.
	Export(ctx context.Context, tokens bool) (*Dump, error)
	// Import loads d into an empty state in one transaction, and refuses
	// a state that holds a job.
	Import(ctx context.Context, d *Dump) error
}

// RowOf is a row of t from vals, its columns' values in order as a
// driver scanned them, each in its canonical form.
func RowOf(t Table, vals []any) (Row, error) {
	r := Row{}
	for i, c := range t.Columns {
		v, err := Canon(c.Kind, vals[i])
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c.Name, err)
		}
		r[c.Name] = v
	}
	return r, nil
}

// Values are the values of r for t's columns in order, as Value gives
// them, for a store to write.
func Values(t Table, r Row) ([]any, error) {
	out := make([]any, len(t.Columns))
	for i, c := range t.Columns {
		x, ok := r[c.Name]
		if !ok {
			x = c.Absent
		}
		v, err := Value(c.Kind, x)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c.Name, err)
		}
		out[i] = v
	}
	return out, nil
}

// Canon returns v, as a driver scanned it, in k's canonical form.
func Canon(k Kind, v any) (any, error) {
	if v == nil {
		switch k {
		case NText, NInt, NTime, NBytes:
			return nil, nil
		case Time: // the SQLite file keeps some times NOT NULL as ''
			return nil, nil
		}
		return nil, fmt.Errorf("null in a column that holds none")
	}
	switch k {
	case Text, NText:
		switch x := v.(type) {
		case string:
			return x, nil
		case []byte:
			return string(x), nil
		}
	case Int, NInt:
		return toInt(v)
	case Bool:
		switch x := v.(type) {
		case bool:
			return x, nil
		default:
			n, err := toInt(v)
			return n != 0, err
		}
	case Time, NTime:
		var t time.Time
		switch x := v.(type) {
		case time.Time:
			t = x
		case string:
			if x == "" {
				return nil, nil
			}
			var err error
			if t, err = time.Parse(time.RFC3339Nano, x); err != nil {
				return nil, fmt.Errorf("bad time %q", x)
			}
		default:
			return nil, fmt.Errorf("a time of type %T", v)
		}
		return t.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano), nil
	case Bytes, NBytes:
		switch x := v.(type) {
		case []byte:
			return base64.StdEncoding.EncodeToString(x), nil
		case string:
			return base64.StdEncoding.EncodeToString([]byte(x)), nil
		}
	}
	return nil, fmt.Errorf("a value of type %T for kind %d", v, k)
}

func toInt(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case int32:
		return int64(x), nil
	case int:
		return int64(x), nil
	case float64:
		return int64(x), nil
	case json.Number:
		return x.Int64()
	case string:
		return strconv.ParseInt(x, 10, 64)
	}
	return 0, fmt.Errorf("an integer of type %T", v)
}

// Value returns the canonical value v (as decoded from JSON too) as the
// Go value a store writes for k: string, int64, bool, time.Time, []byte or
// nil.
func Value(k Kind, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch k {
	case Text, NText:
		if s, ok := v.(string); ok {
			return s, nil
		}
	case Int, NInt:
		return toInt(v)
	case Bool:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case Time, NTime:
		if s, ok := v.(string); ok {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return nil, fmt.Errorf("bad time %q", s)
			}
			return t.UTC(), nil
		}
	case Bytes, NBytes:
		if s, ok := v.(string); ok {
			return base64.StdEncoding.DecodeString(s)
		}
	}
	return nil, fmt.Errorf("a value of type %T for kind %d", v, k)
}

// Read decodes a dump, refusing another format.
func Read(r io.Reader) (*Dump, error) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	var d Dump
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("not a state dump: %w", err)
	}
	if d.Format != Format {
		return nil, fmt.Errorf("state dump format %d: this idemsync reads format %d", d.Format, Format)
	}
	return &d, nil
}

// Equal reports whether a and b hold the same rows, and names the first
// table that differs.
func Equal(a, b *Dump) (bool, string) {
	for _, t := range Tables {
		ja, _ := json.Marshal(a.Tables[t.Name])
		jb, _ := json.Marshal(b.Tables[t.Name])
		if string(ja) != string(jb) {
			return false, fmt.Sprintf("%s (%d rows against %d)", t.Name, len(a.Tables[t.Name]), len(b.Tables[t.Name]))
		}
	}
	return true, ""
}
