package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
	"github.com/jackc/pgx/v5"
)

// splitTombstones splits the deduplicated rows of a page into those
// written and those whose record was a tombstone (target.tombstone).
func splitTombstones(kept []contract.Row) (write, tombs []contract.Row) {
	if !slices.ContainsFunc(kept, func(r contract.Row) bool { return r.Tombstone }) {
		return kept, nil // the common page: nothing to copy
	}
	for _, r := range kept {
		if r.Tombstone {
			tombs = append(tombs, r)
		} else {
			write = append(write, r)
		}
	}
	return write, tombs
}

// bury deletes the stored rows of the tombstones' keys, or on a soft
// table marks those not marked yet, in tx; it returns how many rows it
// deleted or marked. The keys are sent as text arrays cast to the key
// columns' types. A tombstone whose row is absent changes nothing.
func (p *Sink) bury(ctx context.Context, tx pgx.Tx, op string, t *contract.Table, types map[string]string, tombs []contract.Row) (int64, error) {
	if len(tombs) == 0 {
		return 0, nil
	}
	idx := keyIndexes(t)
	var names, casts, params []string
	args := make([]any, 0, len(idx)+1)
	for k, i := range idx {
		c := &t.Columns[i]
		typ := types[c.Name]
		if typ == "" {
			typ = pgType(c.Type)
		}
		col := make([]*string, len(tombs))
		for j, r := range tombs {
			s, err := pgText(c, r.Values[i])
			if err != nil {
				return 0, fmt.Errorf("%s: %w", op, err)
			}
			col[j] = s
		}
		args = append(args, col)
		names = append(names, sqlkit.QuoteIdent(c.Name))
		casts = append(casts, fmt.Sprintf("u.k%d::%s", k, typ))
		params = append(params, fmt.Sprintf("$%d::text[]", k+1))
	}
	alias := make([]string, len(idx))
	for k := range alias {
		alias[k] = fmt.Sprintf("k%d", k)
	}
	where := fmt.Sprintf("(%s) IN (SELECT %s FROM unnest(%s) AS u(%s))", strings.Join(names, ", "),
		strings.Join(casts, ", "), strings.Join(params, ", "), strings.Join(alias, ", "))
	q := "DELETE FROM " + sqlkit.QuoteTable(t) + " WHERE " + where
	if t.Soft() {
		del := sqlkit.QuoteIdent(contract.ColDeletedAt)
		q = fmt.Sprintf("UPDATE %s SET %s = $%d WHERE %[2]s IS NULL AND %[4]s", sqlkit.QuoteTable(t), del, len(idx)+1, where)
		args = append(args, t.Clock().UTC().Truncate(time.Microsecond))
	}
	tag, err := tx.Exec(ctx, q, args...)
	if err != nil {
		return 0, p.dbError(op, err)
	}
	// Fewer rows than tombstones: absent rows, or rows a trigger, rule or
	// policy kept in place (contract.KeptRows), counted only then.
	if n := tag.RowsAffected(); n < int64(len(tombs)) {
		live := ""
		if t.Soft() {
			live = sqlkit.QuoteIdent(contract.ColDeletedAt) + " IS NULL AND "
		}
		var kept int64
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM "+sqlkit.QuoteTable(t)+" WHERE "+live+where, args[:len(idx)]...).Scan(&kept); err != nil {
			return 0, p.dbError(op, err)
		}
		if kept > 0 {
			return 0, contract.KeptRows(t, "page's tombstones", t.Soft(), kept)
		}
	}
	return tag.RowsAffected(), nil
}
