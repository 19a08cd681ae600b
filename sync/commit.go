package sync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/tidwall/gjson"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/internal/failpoint"
	"github.com/idemsync/idemsync/sync/paging"
)

// commit moves one fetched page to its committed checkpoint: validate and
// map all records, upsert them in one target transaction, then commit the
// checkpoint and page row in the state file. It returns true when the page
// completed the run. Once the upsert starts the page is finished even if a
// signal arrives, unless the database does not answer within WriteGrace
// (see writeContext): then the page rolls back.
func (e *Engine) commit(ctx, wctx context.Context, rs *runState, sink contract.Sink, log *slog.Logger, fp fetched) (bool, error) {
	job := e.Job
	where := fp.pos.Describe(job.Pagination.Style, job.Secrets)

	// 1. Validate and map every record (already done while fetching, unless
	// columns are inferred: inference must see the pages in order).
	rows, dead := fp.rows, fp.dead
	changed := false
	if !fp.mapped {
		var err error
		if rows, dead, changed, err = e.mapRecords(&fp, &job.Table, where); err != nil {
			return false, err
		}
	}
	for i := range dead {
		dead[i].RunID = rs.info.ID
	}
	kept := fp.schema.kept // dead letters of records written trimmed by target.schema (schema.go)

	// 2. Refuse loops before writing.
	if err := e.checkLoop(rs, &fp, where); err != nil {
		return false, err
	}

	// 3. Upsert the page in one target transaction, under wctx: a signal
	// or the time limit cancels it only after WriteGrace. With the state
	// in the target's database the checkpoint commits in that transaction
	// (its checks then come first); with a lease elsewhere, the target
	// fences the page (docs/guarantees.md, "One transaction per page",
	// "Fenced targets").
	cols, err := e.prepareTarget(wctx, sink, rows, changed)
	if err != nil {
		return false, err
	}
	pw := e.pageWrite(sink, rows)
	var keys []string
	if pw.joined {
		if keys, err = e.checkPage(ctx, wctx, rs, sink, &fp, rows, dead, where); err != nil {
			return false, err
		}
	}
	var pc *contract.PageCommit
	// A page that writes rows raises the target's progress marker in its
	// transaction, and its checkpoint records it; one that wrote nothing
	// leaves the target's and records the marker it was read under
	// (docs/guarantees.md, "Job identity", "Progress markers").
	var marker int64
	if len(rows) > 0 {
		marker = e.nextProgress() // progress.go
	}
	build := func(counts contract.Counts) *contract.PageCommit {
		skipped := int64(len(dead)) + counts.Dropped
		ckpt := fp.checkpoint()
		pc := &contract.PageCommit{RunID: rs.info.ID, Position: fp.pos.Encode(), Next: ckpt.Encode(), Records: int64(len(fp.resp.Records)),
			Hash: fp.hash, Inserted: counts.Inserted, Updated: counts.Updated, Unchanged: counts.Unchanged, Deleted: counts.Deleted,
			Skipped: skipped, Columns: EncodeColumns(cols), Dead: append(slices.Clip(dead), kept...), Keys: keys, Elapsed: time.Since(fp.t0),
			SchemaChanges: fp.schema.changes, SchemaDiscards: fp.schema.discards, Children: counts.Children}
		if counts.Wrote() {
			pc.Marker = marker
		} else if e.progressor != nil {
			// A page that wrote nothing found its rows in the target as
			// the target's marker had them, which may be ahead of the
			// state's (a state put back from an older backup): the state
			// records that marker, so a target put back behind it is seen
			// as restored (docs/guarantees.md, "Progress markers").
			pc.Marker = e.held
		}
		e.saveMarks(rs, &fp, pc)
		if ckpt.End && !e.sweeps(rs) {
			pc.FinishedAt = time.Now().UTC()
		}
		return pc
	}
	counts, err := e.upsertTarget(ctx, wctx, sink, rows, where, pw, build, &pc)
	if err != nil {
		return false, err
	}
	if marker != 0 && counts.Wrote() {
		e.progress, e.held = marker, marker
	}
	failpoint.Hit("target-committed")
	if counts.Dropped > 0 {
		log.Warn("the target database kept rows of the page out of the table although the write succeeded (a trigger returning NULL?); counted as skipped",
			"position", where, "rows", counts.Dropped)
	}

	// 4. Commit checkpoint and page row, with the page's keys when the run
	// sweeps at its end. The last page completes the run in the same
	// transaction, except for a run that sweeps: its last page leaves it
	// unfinished at its end, and finishPass sweeps and completes it.
	if !pw.joined {
		if keys, err = e.checkPage(ctx, wctx, rs, sink, &fp, rows, dead, where); err != nil {
			return false, &checkpointError{err}
		}
	}
	// The checkpoint's write waits for the state as the target's did (wctx:
	// WriteGrace after a signal); a cancelled one leaves the page's rows in
	// the target ahead of the checkpoint, and the next run reads the page
	// again (docs/operations.md, "Signals").
	if pc == nil { // not joined, or no row to write
		pc = build(counts)
		if err := e.Store.CommitPage(wctx, job.Name, pc); err != nil {
			return false, &checkpointError{fmt.Errorf("commit checkpoint after %s: %w", where, err)}
		}
	}
	failpoint.Hit("checkpoint-committed")

	// 5. Move the run past the page and report it.
	e.advance(ctx, rs, log, &fp, pc, counts, where)
	return fp.checkpoint().End, nil
}

// checkpointError is an error of a page's state write after its rows
// committed in the target: the target is ahead of the checkpoint, and the
// next run reads the page again.
type checkpointError struct{ err error }

func (e *checkpointError) Error() string { return e.err.Error() }
func (e *checkpointError) Unwrap() error { return e.err }

// checkLoop fails with Permanent when the page repeats the previous one
// or its next position was already read in this run.
func (e *Engine) checkLoop(rs *runState, fp *fetched, where string) error {
	job := e.Job
	style := job.Pagination.Style
	pos, next := fp.pos, fp.next
	if len(fp.resp.Records) > 0 && fp.hash == rs.prev {
		return &contract.Error{Class: contract.Permanent, Msg: fmt.Sprintf("page at %s repeats the previous page", where),
			Hint: "the API ignored the pagination parameter; check pagination.param"}
	}
	if !next.End {
		if k := paging.LoopKey(next); k != "" && (rs.seen[k] || k == paging.LoopKey(pos)) {
			return &contract.Error{Class: contract.Permanent, Msg: fmt.Sprintf("pagination loop: %s came back a second time in this run", next.Describe(style, job.Secrets))}
		}
	}
	return nil
}

// prepareTarget adds the columns inferred on this page to the table
// (changed: the page added or widened columns) and returns, when columns
// changed, the table's new columns for the checkpoint.
func (e *Engine) prepareTarget(wctx context.Context, sink contract.Sink, rows []contract.Row, changed bool) ([]contract.Column, error) {
	job := e.Job
	if !changed {
		return nil, nil
	}
	PadRows(&job.Table, rows)
	if err := sink.Prepare(wctx, &job.Table); err != nil {
		return nil, err
	}
	return append([]contract.Column(nil), job.Table.Columns...), nil
}

// checkPage computes the page's keys when the run sweeps and checks what
// they and the response prove (shifts, totals, distinct keys), saving a
// reason found that voids the pass's proof.
func (e *Engine) checkPage(ctx, wctx context.Context, rs *runState, sink contract.Sink, fp *fetched, rows []contract.Row, dead []contract.DeadLetter, where string) ([]string, error) {
	keys, err := e.pageKeys(wctx, rs, sink, rows, dead, where)
	if err != nil {
		return nil, fmt.Errorf("keys of %s: %w", where, err)
	}
	rs.noProof(fp.noProof)
	if e.sweeps(rs) {
		e.checkShift(rs, rs.hashPage(keys), fp.parent, fp.next.End, where)
	}
	e.checkTotal(rs, keys, fp, where)
	if err := e.checkDistinct(rs, fp, rows, where); err != nil {
		return nil, err
	}
	if err := e.saveNoProof(wctx, rs); err != nil {
		return nil, fmt.Errorf("before the checkpoint of %s: %w", where, err)
	}
	return keys, nil
}

// saveMarks sets the marks pc saves for a run of kind run: the job's mark
// for hwm style, and for an incremental job the run's furthest mark and,
// on its last page, the job's mark.
func (e *Engine) saveMarks(rs *runState, fp *fetched, pc *contract.PageCommit) {
	job := e.Job
	style := job.Pagination.Style
	kind := rs.info.Kind
	saveMax := e.savableMax(fp, rs.info.StartedAt, &rs.future)
	full := rs.info.Full
	switch {
	case paging.Of(style).Traits().KeepsMark && kind == contract.KindRun && movesMark(saveMax, rs.hwm, full):
		pc.HWM = saveMax
	case job.Incremental != nil && kind == contract.KindRun:
		if paging.CompareMarks(saveMax, rs.info.MaxMark) > 0 {
			pc.MaxMark = saveMax
			rs.info.MaxMark = saveMax
		}
		if saved := incrementalSavedMark(rs.info.MaxMark, rs.info.StartedAt); fp.checkpoint().End && movesMark(saved, rs.hwm, full) {
			pc.HWM = saved
		}
		// A completed window was read to its upper bound: the mark moves
		// to it, over the contiguous prefix of completed windows.
		if fp.windowTo != "" && paging.CompareMarks(fp.windowTo, pc.HWM) > 0 && movesMark(fp.windowTo, rs.hwm, full) {
			pc.HWM = fp.windowTo
		}
	}
}

// movesMark reports whether m, a mark of a run (full: a full pass), moves
// the job's saved mark: m lies past it, or, in a full pass, m is of the
// other kind. A timestamp and a number have no order and are never
// compared (as text): a full pass read from the start, so its marks
// replace a saved mark of the kind the API no longer writes; any other
// run's marks are of the kind of the saved mark it started from
// (docs/pagination.md, "hwm").
func movesMark(m, saved string, full bool) bool {
	if k := paging.MarkKind(saved); m != "" && k != "" && paging.MarkKind(m) != k {
		return full
	}
	return paging.CompareMarks(m, saved) > 0
}

// advance moves rs past the committed page pc (counts: what the target
// did with its rows), logs it and calls OnPage.
func (e *Engine) advance(ctx context.Context, rs *runState, log *slog.Logger, fp *fetched, pc *contract.PageCommit, counts contract.Counts, where string) {
	job := e.Job
	resp, skipped := fp.resp, pc.Skipped
	if pc.HWM != "" {
		rs.hwm = pc.HWM
	}
	if k := paging.LoopKey(fp.pos); k != "" {
		rs.seen[k] = true
	}
	rs.prev, rs.pos = fp.hash, fp.checkpoint()
	rs.pages++
	rs.records += int64(len(resp.Records))
	rs.skipped += skipped
	rs.total.Add(counts)
	rs.schema.add(fp.schema, pc)
	log.Log(ctx, e.PageLogLevel, "page committed", "position", where, "records", len(resp.Records), "inserted", counts.Inserted,
		"updated", counts.Updated, "unchanged", counts.Unchanged, "skipped", skipped, "ms", time.Since(fp.t0).Milliseconds())
	if e.OnPage != nil {
		e.OnPage(PageEvent{RunID: rs.info.ID, Position: where, Records: len(resp.Records), Counts: counts,
			Skipped: int(skipped), Elapsed: time.Since(fp.t0), Total: rs.total, Pages: rs.pages, RunRecords: rs.records, RunSkipped: rs.skipped, TotalPgs: totalPages(job, resp),
			Checkpoint: rs.pos.Describe(job.Pagination.Style, job.Secrets), HWM: rs.hwm})
	}
}

// mapRecords validates and converts every record of a fetched page to a row
// of t (first adding and widening inferred columns of t from the whole page
// when the job infers them; changed says whether it did). Bad records
// become dead letters under on_bad_record: skip, and fail the page
// otherwise, naming the page, the record, the column and the reason.
func (e *Engine) mapRecords(fp *fetched, t *contract.Table, where string) (rows []contract.Row, dead []contract.DeadLetter, changed bool, err error) {
	job := e.Job
	rows = make([]contract.Row, 0, len(fp.resp.Records))
	mapper := Mapper{Table: t, Infer: job.Infer}
	if fp.parent != "" {
		mapper.Parent = gjson.Parse(fp.parent)
	}
	if job.Infer {
		if fp.schema, err = e.inferPage(&mapper, fp.resp.Records, where); err != nil {
			return nil, nil, false, err
		}
		changed = len(fp.schema.changes) > 0
	}
	for i, rec := range fp.resp.Records {
		if why, ok := fp.schema.drop[i]; ok {
			dead = append(dead, contract.DeadLetter{Job: job.Name, Position: where, Index: i, Reason: job.Secrets.Redact(why), Raw: job.Secrets.Redact(rec.Raw)})
			continue
		}
		row, err := mapper.Map(i, rec)
		row.Tombstone = job.Target.Tombstone.Matches(rec)
		if err == nil && fp.marks != nil && fp.marks[i].err != nil {
			err = &contract.BadRecord{Index: i, Column: e.markPath(), Reason: "mark " + fp.marks[i].err.Error()}
		}
		if err == nil {
			err = checkRow(e.validator, t, row, i)
		}
		if err != nil {
			var bad *contract.BadRecord
			if !errors.As(err, &bad) {
				return nil, nil, false, err
			}
			if job.Target.OnBadRecord != "skip" {
				return nil, nil, false, &contract.Error{Class: contract.Permanent, Msg: fmt.Sprintf("bad record on %s: %s", where, bad.Error()),
					Hint: "fix the source or the mapping, or set target.on_bad_record: skip to dead-letter such records"}
			}
			// Redacted like every output: the state file keeps it and
			// status prints it (docs/job-file.md, "What is and is not a secret").
			dead = append(dead, contract.DeadLetter{Job: job.Name, Position: where, Index: i,
				Reason: job.Secrets.Redact(bad.Error()), Raw: job.Secrets.Redact(rec.Raw)})
			continue
		}
		rows = append(rows, row)
		if why, ok := fp.schema.trim[i]; ok {
			fp.schema.kept = append(fp.schema.kept, contract.DeadLetter{Job: job.Name, Position: where, Index: i,
				Reason: job.Secrets.Redact(why), Raw: job.Secrets.Redact(rec.Raw)})
		}
	}
	return rows, dead, changed, nil
}

func totalPages(job *Job, resp *contract.Response) int64 {
	if p := job.Pagination.TotalPages; p != "" {
		return gjson.GetBytes(resp.Body, p).Int()
	}
	return totalPagesFromTotal(job, resp)
}
