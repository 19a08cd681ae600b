package pgstate

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/idemsync/idemsync/checkpoint/keylist"
	"github.com/idemsync/idemsync/contract"
)

// A row goes only when two consecutive full passes that proved absence
// both missed its key (docs/deletions.md, "Two passes"). As in the SQLite
// state, the pending set is not stored: it is the rows the previous
// proving pass did not see, read back from its page keys.

// PriorPass returns the last full pass of runID's job before runID whose
// sweep ran with proof (runs.swept, migration 0002); ok is false when
// there is none, when its keys are no longer all there, or when a full
// pass since (before runID) has a page without its keys, whose sightings
// are then not all known (as in the SQLite store).
func (s *Store) PriorPass(ctx context.Context, runID int64) (p contract.PriorPass, ok bool, err error) {
	op := fmt.Sprintf("run %d: read the previous proving pass", runID)
	var committed int64 // the pages the pass committed (runs.pages); a pass that committed none saw no key, and that empty set is complete
	err = s.pool.QueryRow(ctx, s.q(`
		SELECT r.id, r.started_at, coalesce(r.live_before, -1), coalesce(r.pending_deletes, -1), r.pages FROM {S}.runs r
		WHERE r.job = (SELECT job FROM {S}.runs WHERE id = $1) AND r.id < $1
		AND r.status = 'completed' AND r.swept
		ORDER BY r.id DESC LIMIT 1`), runID).Scan(&p.ID, &p.StartedAt, &p.LiveBefore, &p.Pending, &committed)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, false, nil
	}
	if err != nil {
		return p, false, s.wrap(op, err)
	}
	p.StartedAt = p.StartedAt.UTC()
	var pages, missing, unsighted int64
	if err := s.pool.QueryRow(ctx, s.q(`SELECT count(*), count(*) - count(keys) FROM {S}.pages WHERE run_id = $1`), p.ID).Scan(&pages, &missing); err != nil {
		return p, false, s.wrap(op, err)
	}
	if err := s.pool.QueryRow(ctx, s.q(`
		SELECT count(*) FROM {S}.pages p JOIN {S}.runs r ON r.id = p.run_id
		WHERE r.job = (SELECT job FROM {S}.runs WHERE id = $1) AND r.id > $2 AND r.id < $1
		AND r.full_pass AND p.keys IS NULL`), runID, p.ID).Scan(&unsighted); err != nil {
		return p, false, s.wrap(op, err)
	}
	return p, (pages > 0 || committed == 0) && missing == 0 && unsighted == 0, nil
}

// SightedKeys calls fn with every key recorded by the pages of runID's
// job's runs from fromID (the previous proving pass) up to, not
// including, runID. A key may come more than once.
func (s *Store) SightedKeys(ctx context.Context, runID, fromID int64, fn func(key string) error) error {
	op := fmt.Sprintf("run %d: read the keys seen since run %d", runID, fromID)
	rows, err := s.pool.Query(ctx, s.q(`
		SELECT p.run_id, p.seq, p.keys FROM {S}.pages p JOIN {S}.runs r ON r.id = p.run_id
		WHERE r.job = (SELECT job FROM {S}.runs WHERE id = $1) AND p.run_id >= $2 AND p.run_id < $1
		AND p.keys IS NOT NULL ORDER BY p.run_id, p.seq`), runID, fromID)
	if err != nil {
		return s.wrap(op, err)
	}
	defer rows.Close()
	for rows.Next() {
		var run, seq int64
		var b []byte
		if err := rows.Scan(&run, &seq, &b); err != nil {
			return s.wrap(op, err)
		}
		if err := keylist.Decode(b, fn); err != nil {
			return s.wrap(op, fmt.Errorf("run %d page %d: %w", run, seq, err))
		}
	}
	if err := rows.Err(); err != nil {
		return s.wrap(op, err)
	}
	return nil
}

// RecordSweep records that the full pass runID swept with proof and left
// pending rows its sweep missed but kept; like every write of a run, it
// holds only while the run's lease does.
func (s *Store) RecordSweep(ctx context.Context, runID, pending int64) error {
	err := s.inRunTx(ctx, runID, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, s.q(`UPDATE {S}.runs SET swept = true, pending_deletes = $1 WHERE id = $2`), pending, runID)
		return err
	})
	return s.wrap(fmt.Sprintf("run %d: record the sweep", runID), err)
}

// supersededKeysSQL drops the keys of the job's runs ($1) that finished for
// good before its last proving pass: no later sweep reads them
// (checkpoint's supersededKeysSQL; docs/deletions.md, "How the keys are
// recorded").
const supersededKeysSQL = `UPDATE {S}.pages SET keys = NULL WHERE keys IS NOT NULL AND run_id IN (
	SELECT id FROM {S}.runs WHERE job = $1 AND status IN ('completed', 'abandoned', 'refused')
	AND id < (SELECT max(id) FROM {S}.runs WHERE job = $1 AND status = 'completed' AND swept))`
