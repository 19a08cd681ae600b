package checkpoint

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/idemsync/idemsync/checkpoint/keylist"
	"github.com/idemsync/idemsync/contract"
)

// A row goes only when two consecutive full passes that proved absence
// both missed its key (docs/deletions.md, "Two passes"). The pending set
// is not stored: it is the rows the previous proving pass did not see,
// read back from that pass's page keys (and those of every full pass
// since, whose sightings clear a key), streamed into the sweep.

// PriorPass returns the last full pass of runID's job before runID whose
// sweep ran with proof (runs.swept, migration 0015); ok is false when
// there is none, when its keys are no longer all there, or when a full
// pass since (before runID) has a page without its keys: that pass's
// sightings, which clear pending rows, are not all known (a pass run while
// the job had deletes: keep, or a page with dead letters), so the sweep
// must not read its missing keys as "not seen". Errors are
// *contract.Error (exit 1).
func (s *Store) PriorPass(ctx context.Context, runID int64) (p contract.PriorPass, ok bool, err error) {
	op := fmt.Sprintf("run %d: read the previous proving pass", runID)
	var started string
	var committed int64 // the pages the pass committed (runs.pages)
	err = s.db.QueryRowContext(ctx, `
		SELECT r.id, r.started_at, coalesce(r.live_before, -1), coalesce(r.pending_deletes, -1), r.pages FROM runs r
		WHERE r.job = (SELECT job FROM runs WHERE id = ?1) AND r.id < ?1
		AND r.status = 'completed' AND r.swept = 1
		ORDER BY r.id DESC LIMIT 1`, runID).Scan(&p.ID, &started, &p.LiveBefore, &p.Pending, &committed)
	if errors.Is(err, sql.ErrNoRows) {
		return p, false, nil
	}
	if err != nil {
		return p, false, s.wrap(op, err)
	}
	if p.StartedAt, err = parseTime(sql.NullString{String: started, Valid: true}); err != nil {
		return p, false, s.wrap(op, err)
	}
	// prune keeps a proving pass's pages (prunable); a file pruned by an
	// older build may have lost them: then there is no pass to compare. A
	// pass that committed no page (a child's with no parent row) saw no
	// key, and that empty set is complete.
	var pages, missing, unsighted int64
	if err := s.db.QueryRowContext(ctx, `SELECT count(*), count(*) - count(keys) FROM pages WHERE run_id = ?`, p.ID).Scan(&pages, &missing); err != nil {
		return p, false, s.wrap(op, err)
	}
	if err := s.db.QueryRowContext(ctx, `
		SELECT count(*) FROM pages p JOIN runs r ON r.id = p.run_id
		WHERE r.job = (SELECT job FROM runs WHERE id = ?1) AND r.id > ?2 AND r.id < ?1
		AND r.full = 1 AND p.keys IS NULL`, runID, p.ID).Scan(&unsighted); err != nil {
		return p, false, s.wrap(op, err)
	}
	return p, (pages > 0 || committed == 0) && missing == 0 && unsighted == 0, nil
}

// SightedKeys calls fn with every key recorded by the pages of runID's
// job's runs from fromID (the previous proving pass) up to, not
// including, runID: that pass's keys and the sightings of every pass
// since. A key may come more than once.
func (s *Store) SightedKeys(ctx context.Context, runID, fromID int64, fn func(key string) error) error {
	op := fmt.Sprintf("run %d: read the keys seen since run %d", runID, fromID)
	rows, err := s.db.QueryContext(ctx, `
		SELECT p.run_id, p.seq, p.keys FROM pages p JOIN runs r ON r.id = p.run_id
		WHERE r.job = (SELECT job FROM runs WHERE id = ?1) AND p.run_id >= ?2 AND p.run_id < ?1
		AND p.keys IS NOT NULL ORDER BY p.run_id, p.seq`, runID, fromID)
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
// pending rows its sweep missed but kept (runs.swept, pending_deletes).
func (s *Store) RecordSweep(ctx context.Context, runID, pending int64) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE runs SET swept = 1, pending_deletes = ? WHERE id = ?`, pending, runID)
		return err
	})
	if err != nil {
		return s.wrap(fmt.Sprintf("run %d: record the sweep", runID), err)
	}
	return nil
}

// supersededKeysSQL drops the keys of the job's runs (?1) that finished for
// good before its last proving pass: a later sweep reads the keys of its
// prior pass, that pass or a later one, and of the passes after it
// (SightedKeys), never these. Without this the state kept the keys of
// every run within the retention, and every run's integrity check read
// them (docs/deletions.md, "How the keys are recorded"). The runs and
// their page rows stay; an unfinished run keeps its keys for resume.
const supersededKeysSQL = `UPDATE pages SET keys = NULL WHERE keys IS NOT NULL AND run_id IN (
	SELECT id FROM runs WHERE job = ?1 AND status IN ('completed', 'abandoned', 'refused')
	AND id < (SELECT max(id) FROM runs WHERE job = ?1 AND status = 'completed' AND swept = 1))`
