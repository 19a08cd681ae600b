package sqlite

import (
	"context"
	"fmt"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

// LatestRows implements contract.RowReader: the most recently written rows
// first. Timestamps are compared as times (julianday), not as text.
func (s *Sink) LatestRows(ctx context.Context, t *contract.Table, limit int) ([]string, [][]*string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	table := sqlkit.QuoteTable(t)
	probe, err := s.db.QueryContext(ctx, "SELECT * FROM "+table+" LIMIT 0")
	if err != nil {
		if strings.Contains(err.Error(), "no such table") {
			return nil, nil, sqlkit.MissingTable(t)
		}
		return nil, nil, s.wrap("read "+t.String(), err)
	}
	all, err := probe.Columns()
	probe.Close()
	if err != nil {
		return nil, nil, s.wrap("read "+t.String(), err)
	}
	cols, sel := sqlkit.ReadColumns(all, "CAST(%s AS TEXT)")
	synced := sqlkit.QuoteIdent(contract.ColSyncedAt)
	q := fmt.Sprintf("SELECT %s FROM %s ORDER BY julianday(%s) DESC, %s DESC LIMIT ?", sel, table, synced, synced)
	rows, err := s.db.QueryContext(ctx, q, limit)
	if err != nil {
		return nil, nil, s.wrap("read "+t.String(), err)
	}
	defer rows.Close()
	var out [][]*string
	for rows.Next() {
		vals, err := sqlkit.ScanText(len(cols), rows.Scan)
		if err != nil {
			return nil, nil, s.wrap("read "+t.String(), err)
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, s.wrap("read "+t.String(), err)
	}
	return cols, out, nil
}
