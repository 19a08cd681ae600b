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

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile/spec"
	"github.com/idemsync/idemsync/sync/paging"
)

// Parent → child fan-out (docs/job-file.md, "Parent → child fan-out").
//
// A child resource walks its pagination once per row of its parent
// resource's target table. Which rows a run walks is fixed when it starts
// (parent_rows, a replay's key range); the rows are read from the parent
// table in key order as the walk reaches them (parent_stream.go). Each is
// a window of the run (windows.go) whose Window.Parent holds the row, so
// the checkpoint is the lowest parent not completed at its next child
// page, plus the parents in flight after it, and a run completes when the
// parent table holds no further parent and every one started completed.

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
	Resource string         // the parent's resource name in the job file ("orders")
	Name     string         // the parent's state name (its Job.Name, "shop.orders")
	Table    contract.Table // the parent's target table (Columns empty when it infers them)
	URL      string         // the parent's target.url: the child reads the parent table through its own target, which must be the same database
	// Rows is ParentRowsChanged or ParentRowsAll. Defaults to changed.
	Rows string
	// Concurrency is how many parents' children are walked at once
	// (fanout_concurrency). Defaults to 1.
	Concurrency int
}

// parentRef matches {parent.COL} in a child's source.
var parentRef = regexp.MustCompile(`\{parent\.([^{}]*)\}`)

// ParentRefs returns the parent columns a source's url, query, headers and
// body name in {parent.COL}, in order of first appearance.
func ParentRefs(s *spec.Source) []string {
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
		if r.Kind == contract.KindRun && r.Status == contract.RunCompleted {
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
		return nil, contract.Errorf(contract.Invalid, "replay %s %q: give the parent's key (%s), comma-separated", flag, v, strings.Join(t.Key, ", "))
	}
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	out, err := e.keyValues(parts)
	if err != nil {
		return nil, contract.Errorf(contract.Invalid, "replay %s %q: %v", flag, v, err)
	}
	return out, nil
}

// keyValues converts the parent's key values, given as text, to their
// columns' types (text when the parent infers its columns).
func (e *Engine) keyValues(parts []string) ([]any, error) {
	t := &e.Job.Parent.Table
	out := make([]any, len(parts))
	for i, p := range parts {
		typ := contract.TypeText
		if c := t.Column(t.Key[i]); c != nil {
			typ = c.Type
		}
		b, _ := json.Marshal(p)
		val, err := Convert(gjson.ParseBytes(b), typ)
		if err != nil || val == nil {
			return nil, fmt.Errorf("parent key %s: %v", t.Key[i], err)
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

// loopParents walks a child run's parents, one window per parent
// (loopWindows), read from the parent table as the walk reaches them
// (parent_stream.go). A run without parents never gets here: it starts
// at its end (begin), and finishPass completes it.
func (e *Engine) loopParents(ctx context.Context, o Options, rs *runState, sink contract.Sink, log *slog.Logger, started time.Time) (string, error) {
	ws := rs.pos.Windows()
	for _, r := range ws.Rows {
		if err := e.holdsCols(r); err != nil {
			return contract.RunFailed, err
		}
	}
	f, err := e.continuedFilter(rs.info, ws.Since)
	if err != nil {
		return contract.RunFailed, err
	}
	return e.loopWindows(ctx, o, rs, sink, log, started, e.newParentWalk(sink, f, ws.Since))
}

// parentNotFound settles a 404 of a parent's children (docs/job-file.md,
// "Parent → child fan-out"). When the parent row is no longer in the
// parent table (the parent resource removed it, or marked it deleted,
// since the run began) the parent is gone with its children: its walk
// ends with no rows and no dead letter, and the pass stays a proof for
// the sweep. Otherwise the 404 is left to missingParent, and under
// on_bad_record: fail it carries a hint.
func (e *Engine) parentNotFound(ctx context.Context, fp *fetched, win Window, sink contract.Sink, log *slog.Logger) {
	var he *contract.Error
	if win.Parent == "" || !errors.As(fp.err, &he) || he.Status != http.StatusNotFound {
		return
	}
	gone, err := e.parentGone(ctx, sink, win.Parent)
	if err != nil {
		log.Warn("cannot tell whether the parent is still in the parent table", "parent", e.parentDesc(win.Parent), "err", e.Job.Secrets.Redact(err.Error()))
	}
	if gone {
		log.Info("parent removed from the parent table since the run began: its children are gone with it", "parent", e.parentDesc(win.Parent))
		fp.err, fp.resp, fp.rows, fp.mapped, fp.hash = nil, &contract.Response{}, nil, true, ""
		fp.next = paging.Position{End: true}
		return
	}
	if e.Job.Target.OnBadRecord != "skip" {
		par := e.Job.Parent.Resource
		fp.err = &contract.Error{Class: contract.ClassOf(fp.err), Err: fp.err, Hint: fmt.Sprintf(
			"the parent is still in the table of %s: if it was deleted at the source, run %s (its target.deletes removes it) and run this resource again; "+
				"to pass over such parents with a dead letter, set on_bad_record: skip; --restart starts the child's walk over from the parent table as it is now", par, par)}
	}
}

// parentGone reports whether the parent row is no longer in the parent
// table (or is marked deleted there).
func (e *Engine) parentGone(ctx context.Context, sink contract.Sink, row string) (bool, error) {
	key, err := e.rowKey(row)
	if err != nil {
		return false, err
	}
	rows, err := sink.ParentRows(ctx, &e.Job.Parent.Table, e.Job.Parent.Table.Key, contract.ParentFilter{From: key, To: key})
	return err == nil && len(rows) == 0, err
}

// rowKey is a parent row's key values, typed as parentKey types them.
func (e *Engine) rowKey(row string) ([]any, error) {
	g := gjson.Parse(row)
	parts := make([]string, len(e.Job.Parent.Table.Key))
	for i, k := range e.Job.Parent.Table.Key {
		parts[i] = g.Get(EscapePath(k)).String()
	}
	return e.keyValues(parts)
}

// missingParent turns a 404 of a parent's children, or a parent value no
// request can carry (unsendableError), under on_bad_record: skip into the
// parent's last page: no rows, a dead letter naming the parent, and the
// parent's walk done (the dead letter keeps the pass from sweeping). Any
// other failure, and either under on_bad_record: fail (exit 1), is left as
// it is.
func (e *Engine) missingParent(fp *fetched, win Window) {
	var he *contract.Error
	var ue *unsendableError
	notFound := errors.As(fp.err, &he) && he.Status == http.StatusNotFound
	if win.Parent == "" || fp.err == nil || e.Job.Target.OnBadRecord != "skip" || !notFound && !errors.As(fp.err, &ue) {
		return
	}
	name := "parent " + e.Job.Parent.Resource + " " + e.parentDesc(win.Parent)
	reason := e.Job.Secrets.Redact(fp.err.Error())
	if !strings.Contains(reason, name) {
		reason = name + ": " + reason
	}
	fp.dead = []contract.DeadLetter{{Job: e.Job.Name, Position: name, Reason: reason, Raw: e.Job.Secrets.Redact(win.Parent)}}
	fp.err, fp.resp, fp.rows, fp.mapped, fp.hash = nil, &contract.Response{}, nil, true, ""
	fp.next = paging.Position{End: true}
}

// parentsUnproven returns why a child pass that walked no parent row
// proves no child row absent ("" when it does; docs/deletions.md, "Two
// passes"): an empty parent table proves the parents gone only when the
// parent resource's latest completed run is a full pass that listed no
// record and swept with proof, and no run of it since read a record.
// Otherwise the table may have been emptied, or replaced by an empty
// one, while its records live at the source.
func (e *Engine) parentsUnproven(ctx context.Context) (string, error) {
	par := e.Job.Parent
	runs, err := e.Store.Runs(ctx, par.Name, 0)
	if err != nil {
		return "", err
	}
	lead := fmt.Sprintf("the parent table %s holds no row to walk, but ", par.Table.String())
	tail := fmt.Sprintf(": it may have been emptied or replaced while its records live at the source; a full pass of %s that lists no record (with deletes: soft or hard) proves them gone", par.Resource)
	for _, r := range runs {
		switch {
		case r.Records > 0 && r.Status != contract.RunCompleted:
			return fmt.Sprintf("%srun %d of %s (%s) read %d record(s) since its last completed run%s", lead, r.ID, par.Resource, r.Status, r.Records, tail), nil
		case r.Status != contract.RunCompleted:
		case r.Records > 0:
			return fmt.Sprintf("%sthe latest completed run of %s (run %d) listed %d record(s)%s", lead, par.Resource, r.ID, r.Records, tail), nil
		case r.Kind != contract.KindRun || !r.Full || !r.Swept:
			return fmt.Sprintf("%sthe latest completed run of %s (run %d) is no full pass that swept with proof%s", lead, par.Resource, r.ID, tail), nil
		default:
			return "", nil
		}
	}
	return fmt.Sprintf("%s%s has no completed run%s", lead, par.Resource, tail), nil
}

// parentsMissing returns why a child pass that walked its parents proves
// no child row absent ("" when it does; docs/deletions.md, "Two passes"):
// the parent table lacks a parent that the parent resource's latest
// completed full pass listed (a row marked deleted is no lack). Such a
// row was deleted by hand or lost while its record lives at the source,
// and the pass never listed its children. Only a parent whose deletes is
// soft or hard records the keys its passes list; for another nothing is
// known and nothing is found missing.
func (e *Engine) parentsMissing(ctx context.Context, sink contract.Sink) (string, error) {
	par := e.Job.Parent
	runs, err := e.Store.Runs(ctx, par.Name, 0)
	if err != nil {
		return "", err
	}
	for _, r := range runs {
		if r.Status != contract.RunCompleted || r.Kind != contract.KindRun || !r.Full {
			continue
		}
		missing, err := sink.MissingParents(ctx, &par.Table, func(fn func(string) error) error {
			_, err := e.Store.SeenKeys(ctx, r.ID, fn) // a page without its keys lists none: the others still count
			return err
		})
		if err != nil || missing == "" {
			return "", err
		}
		return fmt.Sprintf("the parent table %s lacks the parent %s that the latest completed full pass of %s (run %d) listed, "+
			"so this pass did not list its children: the row may have been deleted or lost while its record lives at the source; "+
			"run %s (it writes the row back) and then this resource", par.Table.String(), missing, par.Resource, r.ID, par.Resource), nil
	}
	return "", nil
}

// startChild starts a new child run's walk of its parents: it reads the
// first parent and returns the run's first checkpoint state (Fly) and
// that parent's row, nil and "" when there is no parent row to walk. A
// replay keeps its key range in info.
func (e *Engine) startChild(ctx context.Context, o Options, sink contract.Sink, info *contract.RunInfo, fresh bool) (*paging.Flight, string, error) {
	if o.Kind == contract.KindReplay {
		info.From, info.To = o.From, o.To
	}
	f, since, err := e.parentFilter(ctx, o, fresh)
	if err != nil {
		return nil, "", err
	}
	pw := e.newParentWalk(sink, f, since)
	if ok, err := pw.has(ctx, 0); err != nil || !ok {
		return nil, "", err
	}
	first := pw.start(0).Parent
	ws := paging.Flight{Started: 1}
	pw.save(&ws, map[int]paging.Position{0: {}}, 0)
	return &ws, first, nil
}

// streamed reports whether an unfinished child run walks its parents
// from the parent table (parent_stream.go). A run begun by an earlier
// version walked a copy of them kept in the state file, and starts over.
func streamed(run *contract.RunInfo) bool {
	p, err := paging.DecodePosition("", run.Checkpoint)
	if err != nil || p.End || p.Parent == paging.NoParents {
		return err == nil
	}
	return p.Windows().Last != ""
}
