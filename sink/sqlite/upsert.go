package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
	sqlitedrv "modernc.org/sqlite"
)

// sqliteVersionFunc is the SQL function the version guard calls:
// idemsync_version_ge(type, column, next, stored) is 1 when next >= stored
// in the column type (versionNewer's comparison: numerics by value,
// timestamps by instant whatever their stored form), 0 otherwise.
const sqliteVersionFunc = "idemsync_version_ge"

func init() {
	sqlitedrv.MustRegisterDeterministicScalarFunction(sqliteVersionFunc, 4,
		func(_ *sqlitedrv.FunctionContext, args []driver.Value) (driver.Value, error) {
			typ, _ := args[0].(string)
			name, _ := args[1].(string)
			ok, err := versionNewer(&contract.Column{Name: name}, typeOf(contract.ColumnType(typ)).order, args[2], args[3])
			if err != nil || !ok {
				return int64(0), err
			}
			return int64(1), nil
		})
}

// insertBatch is how many rows one statement writes, at most.
const insertBatch = 50

// countBatch is how many keys one presence count asks for.
const countBatch = 400

// sameBatch is how many rows one unchanged-rows query asks about, at most.
const sameBatch = 1000

// sameCached is how many sizes of the unchanged-rows query are kept
// prepared: the full batch and the usual remainders (a last page).
const sameCached = 8

// sqliteStmts are the prepared statements of one table and column set (for
// full batches; smaller ones run unprepared) and the affinity of each key
// column.
type sqliteStmts struct {
	batch          int                 // rows per full insert or upsert
	insert, upsert *sql.Stmt           // st.batch rows; see sqliteUpsertSQL
	same           map[int]*sql.Stmt   // by rows asked about; see sqliteSameSQL
	sameBatch      int                 // rows per full unchanged-rows query
	keyAff         []string            // affinity of each key column, as t.Key
	keyDecl        []string            // declared type of each key column, as t.Key
	keyIdx         []int               // index in t.Columns of each key column
	verifyIdx      []int               // with t.Verify, index in t.Columns of each other column; see sqliteSameSQL
	convert        []int               // columns declared with a numeric affinity for text (fit.go)
	convertDecl    []string            // declared type of each column of convert
	sql            func(int) [2]string // insert and upsert statements for n rows
	sameSQL        func(int) string    // unchanged-rows query for n rows
	empty          int                 // emptyUnknown, emptyOwn or emptyNo (fresh.go)
}

func (s *Sink) dropStatements() {
	for k, st := range s.stmts {
		st.close()
		delete(s.stmts, k)
	}
}

func (st *sqliteStmts) close() {
	for _, p := range []*sql.Stmt{st.insert, st.upsert} {
		if p != nil {
			p.Close()
		}
	}
	for _, p := range st.same {
		p.Close()
	}
}

// statements returns the statements of t's current column set, preparing
// them on first use. They are reused across pages until the next Prepare
// (which may add columns) drops them.
func (s *Sink) statements(ctx context.Context, t *contract.Table) (*sqliteStmts, error) {
	var sig strings.Builder
	fmt.Fprintf(&sig, "%q %q %q %t %q", t.Name, t.Key, t.Version, t.Verify, t.Deletes)
	for _, c := range t.Columns {
		fmt.Fprintf(&sig, " %q", c.Name)
	}
	if st, ok := s.stmts[sig.String()]; ok {
		return st, nil
	}
	st, err := s.newStatements(ctx, t)
	if err != nil {
		return nil, err
	}
	q := st.sql(st.batch)
	for _, p := range []struct {
		stmt **sql.Stmt
		sql  string
	}{{&st.insert, q[0]}, {&st.upsert, q[1]}} {
		if *p.stmt, err = s.db.PrepareContext(ctx, p.sql); err != nil {
			st.close()
			return nil, err
		}
	}
	s.stmts[sig.String()] = st
	return st, nil
}

// prepareSame prepares the unchanged-rows queries a page of n kept rows
// needs, unless sameCached sizes already are (then the odd size runs
// unprepared).
func (s *Sink) prepareSame(ctx context.Context, st *sqliteStmts, n int) error {
	for _, size := range []int{min(n, st.sameBatch), n % st.sameBatch} {
		if _, ok := st.same[size]; ok || size == 0 || len(st.same) >= sameCached {
			continue
		}
		p, err := s.db.PrepareContext(ctx, st.sameSQL(size))
		if err != nil {
			return err
		}
		st.same[size] = p
	}
	return nil
}

// newStatements reads the key columns' declared types and builds the SQL
// of t's statements:
//
//	insert: INSERT … VALUES … ON CONFLICT (key) DO NOTHING
//	upsert: INSERT … VALUES … ON CONFLICT (key) DO UPDATE SET …
//	        WHERE the stored hash [or, with t.Verify, a stored mapped
//	        column] differs [and the version guard allows] [or, with
//	        soft deletes, the row is marked: then the guard picks
//	        each column's value and the mark is cleared]
//
// Both let the database decide which stored row a key names.
func (s *Sink) newStatements(ctx context.Context, t *contract.Table) (*sqliteStmts, error) {
	decl := map[string]string{}
	rows, err := s.db.QueryContext(ctx, `SELECT name, type FROM pragma_table_info(?)`, t.Name)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			rows.Close()
			return nil, err
		}
		decl[sqlkit.ASCIILower(name)] = typ
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	st := &sqliteStmts{
		batch: max(1, min(insertBatch, 32000/(len(t.Columns)+1))), // SQLite binds at most 32766 parameters
		same:  map[int]*sql.Stmt{},
	}
	if t.Verify {
		for i, c := range t.Columns {
			if !sqlkit.IsKey(t, c.Name) {
				st.verifyIdx = append(st.verifyIdx, i)
			}
		}
	}
	st.sameBatch = max(1, min(sameBatch, 32000/(len(t.Key)+len(st.verifyIdx)+2)))
	for _, k := range t.Key {
		for i, c := range t.Columns {
			if c.Name != k {
				continue
			}
			d, ok := decl[sqlkit.ASCIILower(k)]
			if !ok {
				d = sqliteType(c.Type)
			}
			st.keyIdx, st.keyAff, st.keyDecl = append(st.keyIdx, i), append(st.keyAff, affinity(d)), append(st.keyDecl, d)
		}
	}
	if len(st.keyIdx) != len(t.Key) {
		return nil, contract.Errorf(contract.Permanent, "table %s: a key column is not among the mapped columns", t)
	}
	st.convert = convertingColumns(t, decl)
	for _, j := range st.convert {
		st.convertDecl = append(st.convertDecl, decl[sqlkit.ASCIILower(t.Columns[j].Name)])
	}
	// A row marked deleted when the job had deletes: soft is unmarked by
	// a write whatever deletes says now (docs/deletions.md).
	_, marks := decl[sqlkit.ASCIILower(contract.ColDeletedAt)]
	unmark := t.Soft() || marks
	st.sql = func(n int) [2]string { return sqliteUpsertSQL(t, n, unmark) }
	st.sameSQL = func(n int) string { return sqliteSameSQL(t, n, unmark) }
	return st, nil
}

// sqliteUpsertSQL returns the insert and upsert statements writing n rows
// into t (see newStatements); unmark: the table has the soft-delete mark
// column, which a write clears.
func sqliteUpsertSQL(t *contract.Table, n int, unmark bool) [2]string {
	const target = `"_t"`
	hash, synced := sqlkit.QuoteIdent(contract.ColHash), sqlkit.QuoteIdent(contract.ColSyncedAt)
	var cols, content []string // content: the columns an update copies from the record
	for _, c := range t.Columns {
		q := sqlkit.QuoteIdent(c.Name)
		cols = append(cols, q)
		if !sqlkit.IsKey(t, c.Name) {
			content = append(content, q)
		}
	}
	content = append(content, hash)
	where := fmt.Sprintf("(%s.%s IS NOT excluded.%[2]s%s)", target, hash, sqliteVerifyTerms(t, target, "excluded"))
	guard := "" // with soft deletes, the version guard moves into the SET
	if t.Version != "" {
		v, c := sqlkit.QuoteIdent(t.Version), t.Column(t.Version)
		guard = fmt.Sprintf("(%s.%s IS NULL OR (excluded.%[2]s IS NOT NULL AND %s(%s, %s, excluded.%[2]s, %[1]s.%[2]s)))",
			target, v, sqliteVersionFunc, quoteLiteral(string(c.Type)), quoteLiteral(c.Name))
		where += " AND " + guard
	}
	var sets []string
	for _, q := range content {
		if unmark && guard != "" {
			sets = append(sets, fmt.Sprintf("%[1]s = CASE WHEN %[2]s THEN excluded.%[1]s ELSE %[3]s.%[1]s END", q, guard, target))
		} else {
			sets = append(sets, q+" = excluded."+q)
		}
	}
	sets = append(sets, synced+" = excluded."+synced)
	if unmark {
		// A marked row whose key came back is unmarked even when unchanged,
		// and whatever the version guard decides about its content
		// (docs/deletions.md): the guard chooses each column's value above,
		// not whether the row is written.
		del := sqlkit.QuoteIdent(contract.ColDeletedAt)
		sets = append(sets, del+" = NULL")
		where = fmt.Sprintf("(%s) OR %s.%s IS NOT NULL", where, target, del)
	}
	// The synced-at time, the same for every row, is bound once: ?1 in
	// every row's tuple, first so that each "?" after it takes the next
	// number (2, 3, …) for the row's columns and hash (write's arguments;
	// docs/performance.md, "Round five").
	tuple := "(?1, " + strings.TrimSuffix(strings.Repeat("?, ", len(t.Columns)+1), ", ") + ")"
	head := fmt.Sprintf("INSERT INTO %s AS %s (%s, %s, %s) VALUES %s ON CONFLICT (%s) DO ",
		sqlkit.QuoteIdent(t.Name), target, synced, strings.Join(cols, ", "), hash,
		strings.TrimSuffix(strings.Repeat(tuple+", ", n), ", "), sqlkit.QuoteList(t.Key))
	return [2]string{head + "NOTHING", head + "UPDATE SET " + strings.Join(sets, ", ") + " WHERE " + where}
}

// quoteLiteral quotes s as an SQL string literal.
func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// Upsert writes rows in one transaction (see contract.Sink). Key values are
// first brought to the form their column stores (sqliteKeyValue), and among
// rows with equal keys the last is kept, the others counting as Unchanged.
// Then the database decides: a query joining the page to the table by key
// and hash finds the unchanged rows; of the others, st.batch rows per
// statement, an INSERT … ON CONFLICT DO NOTHING inserts the new keys (its
// change count is Inserted) and, for rows it did not insert, an INSERT … ON
// CONFLICT DO UPDATE … WHERE the hash differs (and the version guard
// allows) updates the changed ones (its change count is Updated). Rows
// neither inserted nor updated are Unchanged, except rows a trigger dropped
// (their key is absent afterwards): those count as Dropped.
//
// On error nothing is committed; the error is a *contract.Error
// (Transient when the file is locked by another process past
// BusyTimeout, Permanent otherwise), or wraps ctx's error.
func (s *Sink) Upsert(ctx context.Context, t *contract.Table, rows []contract.Row) (contract.Counts, error) {
	var n contract.Counts
	if len(rows) == 0 {
		return n, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	op := "upsert into " + t.String()
	st, err := s.statements(ctx, t)
	if err != nil {
		return n, s.wrap(op, err)
	}
	// The columns other than the key are converted for the rows to write
	// only (convertRest, below): an unchanged row is not converted. A
	// verifying run compares them all, so converts them all first.
	all, err := sqliteRows(t, st, rows, !t.Verify)
	if err != nil {
		return n, fmt.Errorf("%s: %w", op, err)
	}
	kept, tombs := splitTombstones(rows, lastOfEachKey(st, all))
	if err := s.prepareSame(ctx, st, len(kept)); err != nil {
		return n, s.wrap(op, err)
	}
	kids, err := s.childStatements(ctx, t) // children.go
	if err != nil {
		return n, s.wrap(op, err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return n, s.wrap(op, err)
	}
	defer tx.Rollback()
	if err := s.widen(ctx, tx, t); err != nil {
		return n, err
	}
	deleted, err := bury(ctx, tx, t, st, all, tombs)
	if ce := (*contract.Error)(nil); errors.As(err, &ce) {
		return n, err
	} else if err != nil {
		return n, s.wrap(op, err)
	}
	// What the page does to the child tables (children.go).
	var kidCounts contract.Counts
	if err := pruneTree(ctx, tx, t, st, all, tombs, true, &kidCounts); err != nil { // children.go
		if ce := (*contract.Error)(nil); errors.As(err, &ce) {
			return n, err // a child row a trigger kept
		}
		return n, s.wrap(op, err)
	}
	own, err := st.ownRowsOnly(ctx, tx, t)
	if err != nil {
		return n, s.wrap(op, err)
	}
	write := kept // into a table holding only rows this load inserted, nothing is asked (fresh.go)
	// With child tables, asked anyway: children are written for the rows written only (children.go).
	if !own || len(t.Children) > 0 {
		if write, err = rowsToWrite(ctx, tx, st, rows, all, kept); err != nil {
			return n, s.wrap(op, err)
		}
	}
	if !t.Verify {
		if err := convertRest(t, st, rows, all, write); err != nil {
			return n, fmt.Errorf("%s: %w", op, err)
		}
	}
	var kidsOf []int // with t.Verify, the rows whose children are rewritten (verify.go)
	if t.Verify {
		if kidsOf, err = treesDiffer(ctx, tx, t, st, kids, rows, all, kept); err != nil {
			return n, s.wrap(op, err)
		}
	}
	if n, err = s.write(ctx, tx, t, st, rows, all, write); err != nil {
		return contract.Counts{}, s.wrap(op, err)
	}
	if err := checkHeld(ctx, tx, t, st, rows, all, write); err != nil { // fit.go
		if ce := (*contract.Error)(nil); errors.As(err, &ce) {
			return contract.Counts{}, err
		}
		return contract.Counts{}, s.wrap(op, err)
	}
	if own && n.Inserted < int64(len(write)) {
		st.empty = emptyNo
	}
	if t.Verify { // a verifying run rewrites the children that differ too (verify.go)
		write = kidsOf
	}
	if err := s.writeChildren(ctx, tx, t, st, kids, rows, all, write, &kidCounts); err != nil {
		if ce := (*contract.Error)(nil); errors.As(err, &ce) {
			return contract.Counts{}, err // a child row a trigger kept, a value a column cannot hold
		}
		return contract.Counts{}, s.wrap(op, err)
	}
	n.Deleted, n.Children = deleted, kidCounts.Children
	n.Unchanged = int64(len(rows)) - n.Inserted - n.Updated - n.Dropped - n.Deleted
	raised := n.Wrote() && t.Progress.Value != 0 // a page that wrote nothing leaves the marker
	if raised {
		if err := s.raiseProgress(ctx, tx, t); err != nil { // progress.go
			return contract.Counts{}, s.wrap(op, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return contract.Counts{}, s.wrap(op, err)
	}
	if raised {
		s.progress = true
	}
	return n, nil
}

// write inserts or updates the rows at the indexes in write, st.batch at a
// time (see Upsert), and returns Inserted, Updated and Dropped.
func (s *Sink) write(ctx context.Context, tx *sql.Tx, t *contract.Table, st *sqliteStmts, rows []contract.Row, all [][]any, write []int) (contract.Counts, error) {
	var n contract.Counts
	perRow := len(t.Columns) + 1
	args := make([]any, 1, 1+st.batch*perRow)
	args[0] = formatTime(t.Clock()) // ?1, the synced-at time of every row (sqliteUpsertSQL)
	for start := 0; start < len(write); start += st.batch {
		chunk := write[start:min(start+st.batch, len(write))]
		args = args[:1]
		for _, i := range chunk {
			args = append(append(args, all[i]...), rows[i].Hash)
		}
		insert, upsert := st.insert, st.upsert
		var q [2]string
		if len(chunk) != st.batch {
			insert, upsert, q = nil, nil, st.sql(len(chunk))
		}
		ins, err := execCount(ctx, tx, insert, q[0], args)
		if err != nil {
			return n, err
		}
		n.Inserted += ins
		if ins == int64(len(chunk)) {
			continue
		}
		upd, err := execCount(ctx, tx, upsert, q[1], args)
		if err != nil {
			return n, err
		}
		n.Updated += upd
	}
	// Rows neither inserted nor updated are unchanged, and rows written
	// are in the table, unless a trigger kept them out: a BEFORE trigger's
	// RAISE(IGNORE), or an AFTER trigger that deleted the row just written,
	// which the statement still counts (lookup.go, droppedRows). A page
	// that writes nothing (unchanged) has nothing kept out, and asks nothing.
	if len(write) == 0 {
		return n, nil
	}
	after, err := s.userTriggers(ctx, tx, t)
	if err != nil {
		return n, err
	}
	if after || n.Inserted+n.Updated < int64(len(write)) {
		dropped, err := droppedRows(ctx, tx, t, st, all, write)
		if err != nil {
			return n, err
		}
		n.Dropped = int64(dropped)
		// Rows counted written and dropped too count as dropped only,
		// taken from the inserted first: a new row an AFTER INSERT
		// trigger deleted is inserted again, and deleted again, by the
		// upsert statement, which counts it updated.
		if excess := n.Inserted + n.Updated + n.Dropped - int64(len(write)); excess > 0 {
			d := min(excess, n.Inserted)
			n.Inserted -= d
			n.Updated -= min(excess-d, n.Updated)
		}
	}
	return n, nil
}

// execCount runs a statement in tx, prepared (stmt) or not (query), and
// returns how many rows it changed.
func execCount(ctx context.Context, tx *sql.Tx, stmt *sql.Stmt, query string, args []any) (int64, error) {
	var res sql.Result
	var err error
	if stmt != nil {
		res, err = tx.StmtContext(ctx, stmt).ExecContext(ctx, args...)
	} else {
		res, err = tx.ExecContext(ctx, query, args...)
	}
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// sqliteRows converts every row to the values SQLite stores, key columns in
// their stored form (sqliteKeyValue); with keysOnly the key columns alone,
// the others left nil for convertRest (lookup.go).
func sqliteRows(t *contract.Table, st *sqliteStmts, rows []contract.Row, keysOnly bool) ([][]any, error) {
	all := make([][]any, len(rows))
	// Each column's conversion, looked up once a page rather than once a
	// value (sqliteValue's lookup by type name, per value, showed in the
	// profile of a first load).
	conv := make([]func(any) (any, bool), len(t.Columns))
	for i := range t.Columns {
		if !keysOnly || slices.Contains(st.keyIdx, i) {
			conv[i] = typeOf(t.Columns[i].Type).value
		}
	}
	// The rows' values in one block, each row's capacity its length: one
	// allocation a page rather than one a row.
	n := len(t.Columns)
	block := make([]any, len(rows)*n)
	for ri, r := range rows {
		if len(r.Values) != n {
			return nil, contract.Errorf(contract.Permanent, "row has %d values for %d columns", len(r.Values), len(t.Columns))
		}
		vals := block[ri*n : (ri+1)*n : (ri+1)*n]
		for i, v := range r.Values {
			if v == nil || conv[i] == nil {
				continue
			}
			out, ok := conv[i](v)
			if !ok {
				return nil, sqlkit.ValueError(&t.Columns[i], v)
			}
			vals[i] = out
		}
		for k, i := range st.keyIdx {
			vals[i] = sqliteKeyValue(t.Columns[i].Type, st.keyAff[k], vals[i])
		}
		all[ri] = vals
	}
	return all, nil
}

// lastOfEachKey returns the indexes of the rows to write: the last row of
// each key (keyIdentity), in the order of those last rows.
func lastOfEachKey(st *sqliteStmts, all [][]any) []int {
	if kept, ok := lastOfEachIntKey(st, all); ok {
		return kept
	}
	var b strings.Builder
	key := make([]any, len(st.keyIdx))
	ids := make([]string, len(all))
	last := make(map[string]int, len(all))
	for ri, vals := range all {
		for k, i := range st.keyIdx {
			key[k] = vals[i]
		}
		ids[ri] = keyIdentity(&b, key)
		last[ids[ri]] = ri
	}
	kept := make([]int, 0, len(last))
	for ri := range all {
		if last[ids[ri]] == ri {
			kept = append(kept, ri)
		}
	}
	return kept
}

// lastOfEachIntKey is lastOfEachKey for a single key column holding an
// integer in every row, the usual key, found by the integer itself rather
// than by each row's identity text (keyIdentity: two allocations a row,
// docs/performance.md, "Round four"). Integers are equal exactly when
// their identities are. It reports false for any other key.
func lastOfEachIntKey(st *sqliteStmts, all [][]any) ([]int, bool) {
	if len(st.keyIdx) != 1 {
		return nil, false
	}
	k := st.keyIdx[0]
	// Keys rising or falling all the way, as most APIs list records, are
	// each there once: every row is kept, without the map (3% of a first
	// load's garbage; docs/performance.md, "Round five").
	rising, falling := true, true
	for ri, vals := range all {
		id, ok := vals[k].(int64)
		if !ok {
			return nil, false
		}
		if ri > 0 {
			prev := all[ri-1][k].(int64)
			rising, falling = rising && id > prev, falling && id < prev
		}
	}
	if rising || falling {
		kept := make([]int, len(all))
		for ri := range kept {
			kept[ri] = ri
		}
		return kept, true
	}
	last := make(map[int64]int, len(all))
	for ri, vals := range all {
		last[vals[k].(int64)] = ri
	}
	kept := make([]int, 0, len(last))
	for ri, vals := range all {
		if last[vals[k].(int64)] == ri {
			kept = append(kept, ri)
		}
	}
	return kept, true
}
