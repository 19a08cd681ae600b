package pgstate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/jackc/pgx/v5"
)

// Job returns what the state knows about job; Holder names the lease's
// holder while its lease runs.
func (s *Store) Job(ctx context.Context, job string) (*contract.JobState, error) {
	op := "job " + job
	if err := checkJob(job); err != nil {
		return nil, s.wrap(op, err)
	}
	st, err := s.readJob(ctx, job)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	who, until, err := s.holder(ctx, job)
	if err != nil {
		return nil, s.wrap(op+": lock", err)
	}
	if who != "" {
		st.Holder = fmt.Sprintf("%s (lease until %s)", who, until.UTC().Format(time.RFC3339))
		st.LeaseUntil = until.UTC()
	}
	return st, nil
}

// readJob reads the job's rows in one repeatable-read transaction, so the
// mark, the latest run and the count agree with each other.
func (s *Store) readJob(ctx context.Context, job string) (*contract.JobState, error) {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // read only
	st := &contract.JobState{Name: job}
	var cols *string
	var fullAt *time.Time
	err = tx.QueryRow(ctx, s.q(`SELECT hwm, columns_json, coalesce(identity, ''), full_pass_at, full_due, target_marker FROM {S}.jobs WHERE name = $1`),
		job).Scan(&st.HWM, &cols, &st.Identity, &fullAt, &st.FullDue, &st.Marker)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read job: %w", err)
	}
	if cols != nil {
		st.Columns = *cols
	}
	st.FullPassAt = utc(fullAt)
	if st.LastRun, err = s.latestRun(ctx, tx, job, ""); err != nil {
		return nil, err
	}
	if st.LastRun != nil && st.LastRun.Kind == contract.KindRun {
		st.LastSync = st.LastRun
	} else if st.LastSync, err = s.latestRun(ctx, tx, job, contract.KindRun); err != nil {
		return nil, err
	}
	if err := tx.QueryRow(ctx, s.q(`SELECT count(*) FROM {S}.dead_letters WHERE job = $1`), job).Scan(&st.DeadLetters); err != nil {
		return nil, fmt.Errorf("count dead letters: %w", err)
	}
	return st, nil
}

// Jobs returns the state of every job, sorted by name.
func (s *Store) Jobs(ctx context.Context) ([]contract.JobState, error) {
	names, err := s.JobNames(ctx)
	if err != nil {
		return nil, err
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

// JobNames returns the names of the jobs in the state, sorted (byte order).
func (s *Store) JobNames(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, s.q(`SELECT name FROM {S}.jobs ORDER BY name COLLATE "C"`))
	if err == nil {
		var names []string
		if names, err = pgx.CollectRows(rows, pgx.RowTo[string]); err == nil {
			return nilIfEmpty(names), nil
		}
	}
	return nil, s.wrap("list jobs", err)
}

// ClearMark forgets the job's saved high-water mark.
func (s *Store) ClearMark(ctx context.Context, job string) error {
	op := "job " + job + ": clear mark"
	if err := checkJob(job); err != nil {
		return s.wrap(op, err)
	}
	err := s.inJobTx(ctx, job, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, s.q(`UPDATE {S}.jobs SET hwm = '' WHERE name = $1`), job)
		return err
	})
	return s.wrap(op, err)
}

// DueFullPass makes the job's next run a full pass (jobs.full_due); the
// saved mark stays.
func (s *Store) DueFullPass(ctx context.Context, job string) error {
	op := "job " + job + ": make the next run a full pass"
	if err := checkJob(job); err != nil {
		return s.wrap(op, err)
	}
	err := s.inJobTx(ctx, job, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, s.q(`UPDATE {S}.jobs SET full_due = true, updated_at = $1 WHERE name = $2`), s.now().UTC(), job)
		return err
	})
	return s.wrap(op, err)
}

// AdoptIdentity stores identity for the run and the job where none is
// stored; it never overwrites one.
func (s *Store) AdoptIdentity(ctx context.Context, job string, runID int64, identity string) error {
	op := "job " + job + ": adopt identity"
	if err := checkJob(job); err != nil {
		return s.wrap(op, err)
	}
	err := s.inJobTx(ctx, job, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, s.q(`UPDATE {S}.runs SET identity = $1 WHERE id = $2 AND job = $3 AND identity IS NULL`),
			identity, runID, job); err != nil {
			return fmt.Errorf("adopt run identity: %w", err)
		}
		if _, err := tx.Exec(ctx, s.q(`UPDATE {S}.jobs SET identity = $1 WHERE name = $2 AND identity IS NULL`), identity, job); err != nil {
			return fmt.Errorf("adopt job identity: %w", err)
		}
		return nil
	})
	return s.wrap(op, err)
}
