package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

// sqliteSameSQL returns the query that tells, among n rows bound as
// (position in the batch, hash, key…[, other column…]), those whose key names a stored
// row with the same hash: it returns the positions of the others, the rows
// to write, so an unchanged page returns no row at all (reading back a row
// for each unchanged record was most of the query's cost on a re-sync:
// docs/performance.md, "Round five"). The database compares the keys, with
// the key columns' affinity. With t.Verify the other mapped columns are
// bound too (sqliteStmts.verifyIdx) and must be the same as well (IS: NULL
// is NULL, values compare with the column's affinity, text byte by byte
// whatever the column's collation, and a value of another storage class is
// not the same). With unmark (a soft table, or one that has the mark
// column from when it was) a marked row is never unchanged: its write
// clears the mark.
func sqliteSameSQL(t *contract.Table, n int, unmark bool) string {
	names := []string{"p", "h"}
	on := []string{fmt.Sprintf("%s.%s = v.h", sqlkit.QuoteIdent(t.Name), sqlkit.QuoteIdent(contract.ColHash))}
	if unmark {
		on = append(on, fmt.Sprintf("%s.%s IS NULL", sqlkit.QuoteIdent(t.Name), sqlkit.QuoteIdent(contract.ColDeletedAt)))
	}
	for i, k := range t.Key {
		names = append(names, fmt.Sprintf("k%d", i))
		on = append(on, fmt.Sprintf("%s.%s = v.k%d", sqlkit.QuoteIdent(t.Name), sqlkit.QuoteIdent(k), i))
	}
	if t.Verify {
		for i, c := range sqliteVerifyColumns(t) {
			names = append(names, fmt.Sprintf("c%d", i))
			on = append(on, fmt.Sprintf("%s.%s IS v.c%d COLLATE BINARY", sqlkit.QuoteIdent(t.Name), sqlkit.QuoteIdent(c), i))
		}
	}
	// The position is the row's place in the batch, written in the
	// statement rather than bound: one value less to box and bind a row.
	params := strings.Repeat(", ?", len(names)-1) + ")"
	var values strings.Builder
	for j := range n {
		if j > 0 {
			values.WriteString(", ")
		}
		fmt.Fprintf(&values, "(%d%s", j, params)
	}
	return fmt.Sprintf("WITH v(%s) AS (VALUES %s) SELECT v.p FROM v WHERE NOT EXISTS (SELECT 1 FROM %s WHERE %s)",
		strings.Join(names, ", "), values.String(), sqlkit.QuoteIdent(t.Name), strings.Join(on, " AND "))
}

// rowsToWrite returns, in their order, the indexes among kept of the rows
// whose stored row (same key, as the database compares keys) does not
// have the same hash: absent, changed, or (soft) marked.
func rowsToWrite(ctx context.Context, tx *sql.Tx, st *sqliteStmts, rows []contract.Row, all [][]any, kept []int) ([]int, error) {
	var changed []bool // by row index; nil while no row needs a write
	args := make([]any, 0, st.sameBatch*(1+len(st.keyIdx)+len(st.verifyIdx)))
	for start := 0; start < len(kept); start += st.sameBatch {
		batch := kept[start:min(start+st.sameBatch, len(kept))]
		args = args[:0]
		for _, ri := range batch {
			args = append(args, rows[ri].Hash)
			for _, i := range st.keyIdx {
				args = append(args, all[ri][i])
			}
			for _, i := range st.verifyIdx {
				args = append(args, all[ri][i])
			}
		}
		var res *sql.Rows
		var err error
		if p, ok := st.same[len(batch)]; ok {
			res, err = tx.StmtContext(ctx, p).QueryContext(ctx, args...)
		} else {
			res, err = tx.QueryContext(ctx, st.sameSQL(len(batch)), args...)
		}
		if err != nil {
			return nil, err
		}
		for res.Next() {
			var j int64
			if err := res.Scan(&j); err != nil {
				res.Close()
				return nil, err
			}
			if changed == nil {
				changed = make([]bool, len(rows))
			}
			changed[batch[j]] = true
		}
		res.Close()
		if err := res.Err(); err != nil {
			return nil, err
		}
	}
	if changed == nil {
		return nil, nil
	}
	var write []int
	for _, ri := range kept {
		if changed[ri] {
			write = append(write, ri)
		}
	}
	return write, nil
}

// convertRest converts the columns other than the key of the rows at idx
// (all[ri], left nil by sqliteRows with keysOnly) to the values SQLite
// stores: the rows a page writes. A row stored unchanged needs none: its
// values are those converted when it was written.
func convertRest(t *contract.Table, st *sqliteStmts, rows []contract.Row, all [][]any, idx []int) error {
	if len(idx) == 0 {
		return nil
	}
	conv := make([]func(any) (any, bool), len(t.Columns))
	for i := range t.Columns {
		if !slices.Contains(st.keyIdx, i) {
			conv[i] = typeOf(t.Columns[i].Type).value
		}
	}
	for _, ri := range idx {
		for i, v := range rows[ri].Values {
			if v == nil || conv[i] == nil {
				continue
			}
			out, ok := conv[i](v)
			if !ok {
				return sqlkit.ValueError(&t.Columns[i], v)
			}
			all[ri][i] = out
		}
	}
	return nil
}

// userTriggers reports whether t has a trigger other than the feed's
// (feed.go, idemsync_feed_*), which write only the feed: one that may
// delete the rows a write just counted. The answer is kept per table with
// the file's schema version (PRAGMA schema_version), which every CREATE or
// DROP TRIGGER changes, from this connection or another: a page asks the
// version alone and looks the triggers up again only when it moved, so a
// trigger created by hand between two pages or two runs is seen by the
// next page. The number of rows written is no such signal: the statement
// still counts a row an AFTER trigger deleted (docs/performance.md, "The
// SQLite trigger lookup").
func (s *Sink) userTriggers(ctx context.Context, tx *sql.Tx, t *contract.Table) (bool, error) {
	var version int64
	if err := tx.QueryRowContext(ctx, `PRAGMA schema_version`).Scan(&version); err != nil {
		return false, err
	}
	name := sqlkit.ASCIILower(t.Name) // SQLite's names ignore ASCII case
	if c, ok := s.triggers[name]; ok && c.version == version {
		return c.has, nil
	}
	var has bool
	err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = ? COLLATE NOCASE
		AND substr(name, 1, 14) <> 'idemsync_feed_')`, t.Name).Scan(&has)
	if err != nil {
		return false, err
	}
	if s.triggers == nil {
		s.triggers = map[string]userTrigs{}
	}
	s.triggers[name] = userTrigs{version: version, has: has}
	return has, nil
}

// userTrigs is userTriggers' answer for a table, at a schema version.
type userTrigs struct {
	version int64 // PRAGMA schema_version when asked
	has     bool
}

// droppedRows returns how many of the kept rows have no stored row with
// their key after the writes: rows a trigger dropped (RAISE(IGNORE)) or
// deleted after writing them (an AFTER trigger). A
// table without triggers drops nothing, and is not asked.
func droppedRows(ctx context.Context, tx *sql.Tx, t *contract.Table, st *sqliteStmts, all [][]any, kept []int) (int, error) {
	var triggers int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = ? COLLATE NOCASE`,
		t.Name).Scan(&triggers); err != nil || triggers == 0 {
		return 0, err
	}
	keyCols := sqlkit.QuoteList(t.Key)
	tuple := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(t.Key)), ", ") + ")"
	present := 0
	for start := 0; start < len(kept); start += countBatch {
		batch := kept[start:min(start+countBatch, len(kept))]
		args := make([]any, 0, len(batch)*len(t.Key))
		for _, ri := range batch {
			for _, i := range st.keyIdx {
				args = append(args, all[ri][i])
			}
		}
		q := fmt.Sprintf("SELECT count(*) FROM %s WHERE (%s) IN (VALUES %s)", sqlkit.QuoteIdent(t.Name), keyCols,
			strings.TrimSuffix(strings.Repeat(tuple+", ", len(batch)), ", "))
		var c int
		if err := tx.QueryRowContext(ctx, q, args...).Scan(&c); err != nil {
			return 0, err
		}
		present += c
	}
	return len(kept) - present, nil
}
