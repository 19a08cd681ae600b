package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

// LatestRows implements contract.RowReader: the most recently written rows
// first, every value cast to text by the server.
func (p *Sink) LatestRows(ctx context.Context, t *contract.Table, limit int) ([]string, [][]*string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	conn, err := p.connect(ctx)
	if err != nil {
		return nil, nil, err
	}
	table := sqlkit.QuoteTable(t)
	probe, err := conn.Query(ctx, "SELECT * FROM "+table+" LIMIT 0")
	if err == nil {
		probe.Close()
		err = probe.Err()
	}
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42P01" { // undefined_table
			return nil, nil, sqlkit.MissingTable(t)
		}
		return nil, nil, p.dbError("read "+t.String(), err)
	}
	var all []string
	for _, fd := range probe.FieldDescriptions() {
		all = append(all, fd.Name)
	}
	cols, sel := sqlkit.ReadColumns(all, "%s::text")
	q := fmt.Sprintf("SELECT %s FROM %s ORDER BY %s DESC NULLS LAST LIMIT $1", sel, table, sqlkit.QuoteIdent(contract.ColSyncedAt))
	rows, err := conn.Query(ctx, q, limit)
	if err != nil {
		return nil, nil, p.dbError("read "+t.String(), err)
	}
	defer rows.Close()
	var out [][]*string
	for rows.Next() {
		vals, err := sqlkit.ScanText(len(cols), rows.Scan)
		if err != nil {
			return nil, nil, p.dbError("read "+t.String(), err)
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, p.dbError("read "+t.String(), err)
	}
	return cols, out, nil
}
