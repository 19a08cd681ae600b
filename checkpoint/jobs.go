package checkpoint

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/idemsync/idemsync/contract"
)

// Job returns what the file knows about job: its saved high-water mark and
// columns, its latest run, its latest run of kind run (LastSync), its dead letter count, and Holder, the process
// holding its run lock ("" when none). A job never seen returns a JobState
// with only Name (and Holder) set. Errors are *contract.Error (exit 1).
func (s *Store) Job(ctx context.Context, job string) (*contract.JobState, error) {
	op := "job " + job
	if err := checkJob(job); err != nil {
		return nil, s.wrap(op, err)
	}
	st, err := s.readJob(ctx, job)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	if st.Holder, err = s.holder(ctx, job); err != nil {
		return nil, s.wrap(op+": lock", err)
	}
	return st, nil
}

// readJob reads the job's rows in one read transaction, so the mark, the
// latest run and the count agree with each other.
func (s *Store) readJob(ctx context.Context, job string) (*contract.JobState, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read only
	st := &contract.JobState{Name: job}
	var cols, fullAt sql.NullString
	err = tx.QueryRowContext(ctx, `SELECT hwm, columns_json, coalesce(identity, ''), full_pass_at, full_due, target_marker FROM jobs WHERE name = ?`,
		job).Scan(&st.HWM, &cols, &st.Identity, &fullAt, &st.FullDue, &st.Marker)
	if errors.Is(err, sql.ErrNoRows) {
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read job: %w", err)
	}
	st.Columns = cols.String
	if st.FullPassAt, err = parseTime(fullAt); err != nil {
		return nil, fmt.Errorf("job's last full pass: %w", err)
	}
	if st.LastRun, err = latestRun(ctx, tx, job); err != nil {
		return nil, err
	}
	if st.LastRun != nil && st.LastRun.Kind == contract.KindRun {
		st.LastSync = st.LastRun
	} else if st.LastSync, err = latestSync(ctx, tx, job); err != nil {
		return nil, err
	}
	err = tx.QueryRowContext(ctx, `SELECT count(*) FROM dead_letters WHERE job = ?`, job).Scan(&st.DeadLetters)
	if err != nil {
		return nil, fmt.Errorf("count dead letters: %w", err)
	}
	return st, nil
}

// latestSync returns the job's newest run of kind run, or nil.
func latestSync(ctx context.Context, q queryer, job string) (*contract.RunInfo, error) {
	r, err := scanRun(q.QueryRowContext(ctx,
		`SELECT `+runColumns+` FROM runs WHERE job = ? AND kind = ? ORDER BY id DESC LIMIT 1`, job, contract.KindRun))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read last sync: %w", err)
	}
	return r, nil
}

// Jobs returns the state of every job in the file, sorted by name (byte
// order), as Job reports it; none for a new file. Errors are *contract.Error
// (exit 1).
func (s *Store) Jobs(ctx context.Context) ([]contract.JobState, error) {
	names, err := s.jobNames(ctx)
	if err != nil {
		return nil, s.wrap("list jobs", err)
	}
	out := make([]contract.JobState, 0, len(names))
	for _, name := range names {
		st, err := s.Job(ctx, name)
		if err != nil {
			return nil, err
		}
		out = append(out, *st)
	}
	return out, nil
}

// jobNames lists the jobs table. The rows are closed before Jobs queries
// again: the Store has a single connection.
func (s *Store) jobNames(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT name FROM jobs ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, rows.Err()
}
