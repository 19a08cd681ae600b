package sync

import (
	"context"
	"fmt"
	"slices"
	gosync "sync"
	"time"

	"github.com/idemsync/idemsync/contract"
)

// memStore is an in-memory Store for engine tests: the state file's
// contract (runs, committed pages, checkpoint, marks) without SQLite.
// Every committed page is kept, in order, and appended to trace.
type memStore struct {
	mu    gosync.Mutex
	runs  []*contract.RunInfo
	pages map[int64][]contract.PageInfo
	hwm   string
	cols  string // encoded columns
	dead  []contract.DeadLetter
	trace *eventLog
}

func newMemStore(trace *eventLog) *memStore {
	return &memStore{pages: map[int64][]contract.PageInfo{}, trace: trace}
}

// memStore is the engine's part of a store only (contract.RunStore): it
// keeps no cycles, metrics, tokens or retention, and its lock excludes
// nothing, so it does not run checkpoint/storetest; the SQLite store does.
var _ contract.RunStore = (*memStore)(nil)

func (s *memStore) Lock(context.Context, string) (func(), error) { return func() {}, nil }

func (s *memStore) Check(context.Context) error { return nil }

func (s *memStore) Job(_ context.Context, job string) (*contract.JobState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	js := &contract.JobState{Name: job, HWM: s.hwm, Columns: s.cols}
	for _, r := range slices.Backward(s.runs) {
		c := *r
		if js.LastRun == nil {
			js.LastRun, js.Identity = &c, r.Identity
		}
		if js.LastSync == nil && r.Kind == contract.KindRun {
			js.LastSync = &c
		}
	}
	return js, nil
}

func (s *memStore) Jobs(ctx context.Context) ([]contract.JobState, error) { return nil, nil }

func (s *memStore) Unfinished(context.Context, string) (*contract.RunInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.runs); n > 0 && s.runs[n-1].Unfinished() {
		c := *s.runs[n-1]
		return &c, nil
	}
	return nil, nil
}

func (s *memStore) StartRun(_ context.Context, r *contract.RunInfo) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := *r
	c.ID = int64(len(s.runs) + 1)
	s.runs = append(s.runs, &c)
	return c.ID, nil
}

func (s *memStore) run(id int64) (*contract.RunInfo, error) {
	if id < 1 || int(id) > len(s.runs) {
		return nil, fmt.Errorf("no run %d", id)
	}
	return s.runs[id-1], nil
}

func (s *memStore) Reopen(_ context.Context, id int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.run(id)
	if err == nil {
		r.Status = contract.RunRunning
	}
	return err
}

func (s *memStore) CommitPage(ctx context.Context, _ string, p *contract.PageCommit) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.run(p.RunID)
	if err != nil {
		return err
	}
	if r.Status != contract.RunRunning {
		return fmt.Errorf("run %d is %s, not running", r.ID, r.Status)
	}
	r.Checkpoint, r.Last = p.Next, p.Position
	r.Pages++
	r.Records += p.Records
	r.Inserted += p.Inserted
	r.Updated += p.Updated
	r.Unchanged += p.Unchanged
	r.Skipped += p.Skipped
	if p.MaxMark != "" {
		r.MaxMark = p.MaxMark
	}
	if p.HWM != "" {
		s.hwm = p.HWM
	}
	if p.Columns != "" {
		s.cols = p.Columns
	}
	if !p.FinishedAt.IsZero() {
		r.Status, r.FinishedAt = contract.RunCompleted, p.FinishedAt
	}
	s.dead = append(s.dead, p.Dead...)
	s.pages[r.ID] = append(s.pages[r.ID], contract.PageInfo{RunID: r.ID, Seq: int64(len(s.pages[r.ID]) + 1),
		Position: p.Position, Next: p.Next, Records: p.Records, Hash: p.Hash, CommittedAt: time.Now()})
	s.trace.add("checkpoint " + p.Position)
	return nil
}

func (s *memStore) FinishRun(_ context.Context, id int64, status, errMsg, hwm string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.run(id)
	if err != nil {
		return err
	}
	r.Status, r.Error, r.FinishedAt = status, errMsg, time.Now()
	if status == contract.RunCompleted && hwm != "" {
		s.hwm = hwm
	}
	return nil
}

func (s *memStore) ClearMark(context.Context, string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hwm = ""
	return nil
}

func (s *memStore) AdoptIdentity(_ context.Context, _ string, id int64, identity string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.run(id)
	if err == nil && r.Identity == "" {
		r.Identity = identity
	}
	return err
}

func (s *memStore) Pages(_ context.Context, id int64) ([]contract.PageInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.pages[id]), nil
}

func (s *memStore) LatestStart(context.Context) (time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var t time.Time
	for _, r := range s.runs {
		if r.StartedAt.After(t) {
			t = r.StartedAt
		}
	}
	return t, nil
}

func (s *memStore) Runs(_ context.Context, _ string, n int) ([]contract.RunInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []contract.RunInfo
	for _, r := range slices.Backward(s.runs) {
		if n > 0 && len(out) == n {
			break
		}
		out = append(out, *r)
	}
	return out, nil
}

func (s *memStore) DeadLetters(context.Context, string, int) ([]contract.DeadLetter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.dead), nil
}

// SchemaChanges: the in-memory store keeps none; the engine's records of
// them are tested against the state stores (e2e).
func (s *memStore) SchemaChanges(context.Context, string, int) ([]contract.SchemaChange, error) {
	return nil, nil
}

// SeenKeys: the in-memory store keeps no keys; engine tests that sweep
// use the checkpoint package's store.
func (s *memStore) SeenKeys(context.Context, int64, func(string) error) (bool, error) {
	return false, nil
}

func (s *memStore) CompletePass(_ context.Context, id int64, deleted int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.run(id)
	if err != nil {
		return err
	}
	if r.Status != contract.RunRunning {
		return fmt.Errorf("run %d is %s, not running", r.ID, r.Status)
	}
	r.Status, r.FinishedAt, r.Deleted = contract.RunCompleted, time.Now(), r.Deleted+deleted
	return nil
}

func (s *memStore) SkipSweep(_ context.Context, id int64, reason string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.run(id)
	if err == nil && r.SweepSkipped == "" {
		r.SweepSkipped = reason
	}
	return err
}

func (s *memStore) DueFullPass(context.Context, string) error { return nil }

func (s *memStore) RefusePass(_ context.Context, id int64, errMsg string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.run(id)
	if err == nil {
		r.Status, r.Error = contract.RunRefused, errMsg
	}
	return err
}

func (s *memStore) Close() error { return nil }

// lastRun returns a copy of the latest run.
func (s *memStore) lastRun() contract.RunInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.runs[len(s.runs)-1]
}

// memSink is an in-memory Sink: rows by key, each upsert appended to
// trace with the first column's values (the id in these tests). upsert, when set, runs first and may fail the page.
type memSink struct {
	mu     gosync.Mutex
	rows   map[string]contract.Row
	trace  *eventLog
	upsert func(ctx context.Context, rows []contract.Row) error
	verify []bool // Table.Verify of each upsert
}

var _ contract.Sink = (*memSink)(nil)

func (s *memSink) Prepare(context.Context, *contract.Table) error { return nil }

func (s *memSink) Upsert(ctx context.Context, t *contract.Table, rows []contract.Row) (contract.Counts, error) {
	if s.upsert != nil {
		if err := s.upsert(ctx, rows); err != nil {
			return contract.Counts{}, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.verify = append(s.verify, t.Verify)
	var c contract.Counts
	ids := make([]any, 0, len(rows))
	for _, r := range rows {
		k := contract.KeyString(t, r)
		ids = append(ids, r.Values[0])
		old, ok := s.rows[k]
		switch {
		case !ok:
			c.Inserted++
		case fmt.Sprint(old.Values) == fmt.Sprint(r.Values):
			c.Unchanged++
		default:
			c.Updated++
		}
		s.rows[k] = r
	}
	s.trace.add(fmt.Sprintf("upsert %v", ids))
	return c, nil
}

func (s *memSink) Close() error { return nil }

// TableState: the table exists once prepared; empty while no row is held.
func (s *memSink) TableState(context.Context, *contract.Table) (bool, bool, error) {
	return true, s.count() == 0, nil
}

// The rest of contract.Sink is what memSink cannot do: jobs run on it keep
// their rows (deletes: keep), have no parent (fanSink reads one) and have
// no values a database would refuse.

func (s *memSink) KeyForms(context.Context, *contract.Table, []contract.Row) ([]string, error) {
	return nil, contract.ErrNotImplemented
}

func (s *memSink) Sweep(context.Context, *contract.Table, contract.SweepRequest) (contract.SweepResult, error) {
	return contract.SweepResult{}, contract.ErrNotImplemented
}

func (s *memSink) LiveRows(context.Context, *contract.Table) (int64, error) {
	return 0, contract.ErrNotImplemented
}

func (s *memSink) ClaimTable(context.Context, *contract.Table, contract.TableClaim) error {
	return contract.ErrNotImplemented
}

func (s *memSink) ParentRows(context.Context, *contract.Table, []string, contract.ParentFilter) ([][]*string, error) {
	return nil, contract.ErrNotImplemented
}

func (s *memSink) MissingParents(context.Context, *contract.Table, func(func(string) error) error) (string, error) {
	return "", contract.ErrNotImplemented
}

func (s *memSink) LatestRows(context.Context, *contract.Table, int) ([]string, [][]*string, error) {
	return nil, nil, contract.ErrNotImplemented
}

func (s *memSink) CheckRow(*contract.Table, contract.Row) error { return contract.ErrNotImplemented }
func (s *memSink) FeedDB(context.Context, *contract.Table) (contract.FeedDB, error) {
	return contract.FeedDB{}, contract.ErrNotImplemented
}

func (s *memSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.rows)
}

// eventLog records the engine's durable steps in the order they happen.
type eventLog struct {
	mu     gosync.Mutex
	events []string
}

func (l *eventLog) add(e string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *eventLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// PriorPass: the in-memory store keeps no keys, so no pass before a run
// can decide a removal (docs/deletions.md, "Two passes").
func (s *memStore) PriorPass(context.Context, int64) (contract.PriorPass, bool, error) {
	return contract.PriorPass{}, false, nil
}

func (s *memStore) SightedKeys(context.Context, int64, int64, func(string) error) error { return nil }

func (s *memStore) RecordSweep(_ context.Context, id, pending int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.run(id)
	if err == nil {
		r.Swept, r.PendingDeletes = true, pending
	}
	return err
}
