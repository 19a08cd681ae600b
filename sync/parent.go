package sync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// Parent → child fan-out (SPEC §8).
//
// A child resource walks its pagination once per row of its parent
// resource's target table. The rows a run walks are fixed when it starts
// (the parent snapshot, stored with the run): each is a window of the run
// (windows.go) whose Window.Parent holds the row, so the checkpoint is the
// lowest parent not completed at its next child page, plus the parents in
// flight after it, and a run completes when every parent of its snapshot
// completed.

// Values of parent_rows.
const (
	// ParentRowsChanged walks the parent rows written (inserted or
	// updated) since the child's last completed run of kind run began.
	ParentRowsChanged = "changed"
	// ParentRowsAll walks every parent row.
	ParentRowsAll = "all"
)

// ParentRowsModes lists the valid parent_rows values.
var ParentRowsModes = []string{ParentRowsChanged, ParentRowsAll}

// ParentSpec is what a child resource knows of its parent resource.
type ParentSpec struct {
	Resource string // the parent's resource name in the job file ("orders")
	Name     string // the parent's state name (its Job.Name, "shop.orders")
	Table    Table  // the parent's target table (Columns empty when it infers them)
	URL      string // the parent's target.url: the child reads the parent table through its own target, which must be the same database
	// Rows is ParentRowsChanged or ParentRowsAll. Defaults to changed.
	Rows string
	// Concurrency is how many parents' children are walked at once
	// (fanout_concurrency). Defaults to 1.
	Concurrency int
}

// ParentFilter selects the parent rows a child run walks.
type ParentFilter struct {
	// Since, when not zero, keeps the rows whose ColSyncedAt is at or
	// after it.
	Since time.Time
	// From and To, when not nil, bound the key (inclusive): one value per
	// key column, typed as Convert returns them for the column's type.
	From, To []any
}

// ParentReader is a Sink that can read a parent resource's table for a
// child's fan-out.
type ParentReader interface {
	// ParentRows returns, for every row of t that f keeps (never a row
	// marked deleted on a deletes: soft table), the values of
	// cols as text (nil for NULL; integers and decimals in decimal
	// notation, booleans true or false, timestamps in RFC 3339, json as
	// JSON text), ordered by t.Key ascending. A missing table or column
	// fails with an *Error naming it.
	ParentRows(ctx context.Context, t *Table, cols []string, f ParentFilter) ([][]*string, error)
}

// ParentStore is a Store that keeps the parent snapshot of a child run:
// StartRun stores RunInfo.Parents with the run in the same transaction,
// RunParents returns them, in order.
type ParentStore interface {
	RunParents(ctx context.Context, runID int64) ([]string, error)
}

// noParents is Position.Parent of a child run without parent rows: it
// completes as it starts.
const noParents = "-"

// parentRef matches {parent.COL} in a child's source.
var parentRef = regexp.MustCompile(`\{parent\.([^{}]*)\}`)

// ParentRefs returns the parent columns a source's url, query, headers and
// body name in {parent.COL}, in order of first appearance.
func ParentRefs(s *Source) []string {
	var out []string
	add := func(text string) {
		for _, m := range parentRef.FindAllStringSubmatch(text, -1) {
			if !slices.Contains(out, m[1]) {
				out = append(out, m[1])
			}
		}
	}
	add(s.URL)
	for _, k := range sortedKeys(s.Query) {
		for _, v := range s.Query[k] {
			add(v)
		}
	}
	for _, k := range sortedKeys(s.Headers) {
		add(s.Headers[k])
	}
	add(string(s.Body))
	return out
}

// parentCols is what a child reads of each parent row: the parent's key
// columns, then those its source and its columns refer to.
func (j *Job) parentCols() []string {
	cols := slices.Clone(j.Parent.Table.Key)
	for _, c := range ParentRefs(&j.Source) {
		if !slices.Contains(cols, c) {
			cols = append(cols, c)
		}
	}
	for _, c := range j.Table.Columns {
		if c.Parent != "" && !slices.Contains(cols, c.Parent) {
			cols = append(cols, c.Parent)
		}
	}
	return cols
}

// parentSnapshot reads the parent rows a new child run walks and returns
// them encoded (a JSON object of column to text or null each). A run of
// kind run reads the rows changed since the start of the child's last
// completed run of kind run (all of them for parent_rows: all, or when
// none completed, or when the run starts fresh: --restart, the child's
// table lost, its walk changed); a replay reads the rows whose key lies in
// [o.From, o.To].
func (e *Engine) parentSnapshot(ctx context.Context, o Options, sink Sink, fresh bool) ([]string, error) {
	par := e.Job.Parent
	pr, ok := sink.(ParentReader)
	if !ok {
		return nil, Errorf(ExitPermanent, "parent %s: the target database cannot read the parent table", par.Resource)
	}
	var f ParentFilter
	var err error
	switch {
	case o.Kind == KindReplay:
		if f.From, err = e.parentKey(o.From, "--from"); err != nil {
			return nil, err
		}
		if o.To != "" {
			if f.To, err = e.parentKey(o.To, "--to"); err != nil {
				return nil, err
			}
		}
	case par.Rows != ParentRowsAll && !fresh:
		if f.Since, err = e.lastCompletedStart(ctx); err != nil {
			return nil, err
		}
	}
	cols := e.Job.parentCols()
	rows, err := pr.ParentRows(ctx, &par.Table, cols, f)
	if err != nil {
		return nil, wrapPermanent(fmt.Sprintf("parent %s: read %s", par.Resource, par.Table.String()), err)
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		m := make(map[string]*string, len(cols))
		for k, c := range cols {
			m[c] = r[k]
		}
		b, _ := json.Marshal(m)
		out[i] = string(b)
	}
	return out, nil
}

// lastCompletedStart is the start of the child's last completed run of
// kind run, rounded down to the millisecond (the zero time when none):
// parent rows written since then are the ones parent_rows: changed walks.
// Both times come from the process clock; the rounding covers the
// databases' coarser time comparisons (SQLite's julianday), so it may walk
// a parent written in the same millisecond again, never miss one.
func (e *Engine) lastCompletedStart(ctx context.Context) (time.Time, error) {
	runs, err := e.Store.Runs(ctx, e.Job.Name, 0)
	if err != nil {
		return time.Time{}, err
	}
	for _, r := range runs {
		if r.Kind == KindRun && r.Status == RunCompleted {
			return r.StartedAt.UTC().Truncate(time.Millisecond), nil
		}
	}
	return time.Time{}, nil
}

// parentKey reads a replay's --from or --to of a child: the parent's key
// values, comma-separated for a key of several columns, each converted to
// its column's type (text when the parent infers its columns).
func (e *Engine) parentKey(v, flag string) ([]any, error) {
	t := &e.Job.Parent.Table
	parts := []string{v}
	if len(t.Key) > 1 {
		parts = strings.Split(v, ",")
	}
	if len(parts) != len(t.Key) {
		return nil, Errorf(ExitUsage, "replay %s %q: give the parent's key (%s), comma-separated", flag, v, strings.Join(t.Key, ", "))
	}
	out := make([]any, len(parts))
	for i, p := range parts {
		typ := TypeText
		if c := t.Column(t.Key[i]); c != nil {
			typ = c.Type
		}
		b, _ := json.Marshal(strings.TrimSpace(p))
		val, err := Convert(gjson.ParseBytes(b), typ)
		if err != nil || val == nil {
			return nil, Errorf(ExitUsage, "replay %s %q: parent key %s: %v", flag, v, t.Key[i], err)
		}
		out[i] = val
	}
	return out, nil
}

// parentDesc names a parent row by its key: "id=42".
func (e *Engine) parentDesc(row string) string {
	g := gjson.Parse(row)
	parts := make([]string, 0, len(e.Job.Parent.Table.Key))
	for _, k := range e.Job.Parent.Table.Key {
		parts = append(parts, k+"="+g.Get(EscapePath(k)).String())
	}
	return strings.Join(parts, " ")
}

// parentWindows is one window per parent row of the snapshot.
func parentWindows(rows []string) []Window {
	wins := make([]Window, len(rows))
	for i, r := range rows {
		wins[i] = Window{Parent: r}
	}
	return wins
}

// substParent replaces every {parent.COL} of s by the parent row's value
// of COL, escaped by esc. A column the row lacks or that is NULL fails.
func substParent(s, row string, esc func(string) string) (string, error) {
	var err error
	out := parentRef.ReplaceAllStringFunc(s, func(m string) string {
		col := parentRef.FindStringSubmatch(m)[1]
		v := gjson.Get(row, EscapePath(col))
		switch {
		case !v.Exists():
			err = fmt.Errorf("{parent.%s}: the parent table has no column %s", col, col)
		case v.Type == gjson.Null:
			err = fmt.Errorf("{parent.%s}: the parent's %s is NULL", col, col)
		}
		return esc(v.String())
	})
	return out, err
}

// loopParents walks a child run's parent snapshot, one window per parent
// (loopWindows). A run without parents never gets here: it starts at its
// end (begin), and finishPass completes it.
func (e *Engine) loopParents(ctx context.Context, o Options, rs *runState, sink Sink, log *slog.Logger, started time.Time) (string, error) {
	return e.loopWindows(ctx, o, rs, sink, log, started, parentWindows(rs.parents))
}

// missingParent turns a 404 of a parent's children under
// on_bad_record: skip into the parent's last page: no rows, a dead letter
// naming the parent, and the parent's walk done. Any other failure, and a
// 404 under on_bad_record: fail, is left as it is.
func (e *Engine) missingParent(fp *fetched, win Window) {
	var he *Error
	if win.Parent == "" || fp.err == nil || e.Job.Target.OnBadRecord != "skip" || !errors.As(fp.err, &he) || he.Status != http.StatusNotFound {
		return
	}
	name := "parent " + e.Job.Parent.Resource + " " + e.parentDesc(win.Parent)
	reason := e.Job.Secrets.Redact(fp.err.Error())
	if !strings.Contains(reason, name) {
		reason = name + ": " + reason
	}
	fp.dead = []DeadLetter{{Job: e.Job.Name, Position: name, Reason: reason, Raw: e.Job.Secrets.Redact(win.Parent)}}
	fp.err, fp.resp, fp.rows, fp.mapped, fp.hash = nil, &Response{}, nil, true, ""
	fp.next = Position{End: true}
}

// startChild takes a new child run's parent snapshot into info (and, for
// a replay, its key range). The state file must be able to keep it.
func (e *Engine) startChild(ctx context.Context, o Options, sink Sink, info *RunInfo, fresh bool) error {
	if _, ok := e.Store.(ParentStore); !ok {
		return Errorf(ExitPermanent, "resource with parent %s: the state file cannot keep a parent snapshot", e.Job.Parent.Resource)
	}
	parents, err := e.parentSnapshot(ctx, o, sink, fresh)
	if err != nil {
		return err
	}
	info.Parents = parents
	if len(parents) == 0 {
		info.Parents = []string{}
	}
	if o.Kind == KindReplay {
		info.From, info.To = o.From, o.To
	}
	return nil
}

// runParents reads a continued child run's parent snapshot and checks it
// holds every parent column the job uses.
func (e *Engine) runParents(ctx context.Context, runID int64) ([]string, error) {
	ps, ok := e.Store.(ParentStore)
	if !ok {
		return nil, Errorf(ExitPermanent, "resource with parent %s: the state file cannot keep a parent snapshot", e.Job.Parent.Resource)
	}
	parents, err := ps.RunParents(ctx, runID)
	if err != nil {
		return nil, err
	}
	return parents, e.snapshotHolds(parents)
}

// snapshotHolds checks that a continued child run's snapshot holds every
// parent column the job uses now: a {parent: COL} column added to the
// mapping since the run started (the mapping is not part of the walk)
// would otherwise be written NULL.
func (e *Engine) snapshotHolds(parents []string) error {
	if len(parents) == 0 {
		return nil
	}
	row := gjson.Parse(parents[0])
	for _, c := range e.Job.parentCols() {
		if !row.Get(EscapePath(c)).Exists() {
			return Errorf(ExitUsage, "the unfinished run took its parent rows before the job used the parent's column %s: run with --restart to take them again", c)
		}
	}
	return nil
}
