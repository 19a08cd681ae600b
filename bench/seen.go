package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// seenDesign measures, on a table of n rows, what recording "this key was
// seen by the current full pass" adds to an unchanged re-sync, for the
// three ways of keeping that record (docs/deletions.md):
//
//   - none:   the unchanged re-sync today: per page, read the stored
//     hashes of the page's keys, write nothing;
//   - table:  the same plus INSERT of the page's keys into a side table of
//     the target (key, pass) in the same transaction;
//   - column: the same plus UPDATE of a bookkeeping column of every row of
//     the page to the pass id (rewrites every unchanged row);
//   - state:  the same plus INSERT of the page's keys into a table of a
//     second SQLite file (the state file), in its own transaction;
//   - blob:   the same plus one row per page in the state file holding the
//     page's keys as one value.
//
// Pages hold size keys; every figure is one pass over all n rows.
func seenDesign(dir, pgURL string, n, size int) error {
	fmt.Printf("\n## seen-in-pass design: %d rows, pages of %d, unchanged re-sync (database work only)\n", n, size)
	sq, err := seenSQLite(filepath.Join(dir, "seen.db"), filepath.Join(dir, "seen-state.db"), n, size)
	if err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	printSeen("sqlite", sq)
	if pgURL == "" {
		return nil
	}
	pg, err := seenPostgres(pgURL, filepath.Join(dir, "seen-pgstate.db"), n, size)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	printSeen("postgres", pg)
	return nil
}

func printSeen(db string, d map[string]time.Duration) {
	base := d["none"]
	for _, k := range []string{"none", "table", "column", "state", "blob"} {
		fmt.Printf("%-9s %-7s %8.2fs  +%6.2fs over none\n", db, k, d[k].Seconds(), (d[k] - base).Seconds())
	}
}

func placeholders(n, from int, dollar bool) string {
	p := make([]string, n)
	for i := range p {
		if dollar {
			p[i] = fmt.Sprintf("$%d", from+i)
		} else {
			p[i] = "?"
		}
	}
	return strings.Join(p, ",")
}

func seenSQLite(path, statePath string, n, size int) (map[string]time.Duration, error) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	st, err := openState(statePath)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	for _, q := range []string{
		`CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, email TEXT, _idemsync_hash TEXT, _idemsync_seen INTEGER)`,
		`CREATE TABLE seen (id INTEGER PRIMARY KEY, pass INTEGER) WITHOUT ROWID`,
		`WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM c WHERE i < ` + fmt.Sprint(n) + `)
		 INSERT INTO t SELECT i, 'name ' || i, 'u' || i || '@example.com', hex(randomblob(16)), 0 FROM c`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return nil, err
		}
	}
	return seenPasses(n, size, func(mode string, pass int, keys []any) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := readHashes(ctx, tx, placeholders(len(keys), 1, false), keys); err != nil {
			return err
		}
		switch mode {
		case "table":
			vals := strings.Repeat(",(?,"+fmt.Sprint(pass)+")", len(keys))[1:]
			_, err = tx.ExecContext(ctx, `INSERT INTO seen(id, pass) VALUES `+vals+` ON CONFLICT(id) DO UPDATE SET pass = excluded.pass`, keys...)
		case "column":
			_, err = tx.ExecContext(ctx, `UPDATE t SET _idemsync_seen = `+fmt.Sprint(pass)+` WHERE id IN (`+placeholders(len(keys), 1, false)+`)`, keys...)
		case "state":
			err = stateInsert(ctx, st, pass, keys)
		case "blob":
			err = stateBlob(ctx, st, pass, keys)
		}
		if err != nil {
			return err
		}
		return tx.Commit()
	})
}

func readHashes(ctx context.Context, tx *sql.Tx, ph string, keys []any) error {
	rows, err := tx.QueryContext(ctx, `SELECT id, _idemsync_hash FROM t WHERE id IN (`+ph+`)`, keys...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var h string
		if err := rows.Scan(&id, &h); err != nil {
			return err
		}
	}
	return rows.Err()
}

func openState(path string) (*sql.DB, error) {
	st, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	if err != nil {
		return nil, err
	}
	st.SetMaxOpenConns(1)
	_, err = st.Exec(`CREATE TABLE seen (pass INTEGER, id INTEGER, PRIMARY KEY (pass, id)) WITHOUT ROWID;
		CREATE TABLE seen_pages (pass INTEGER, page INTEGER, keys BLOB, PRIMARY KEY (pass, page))`)
	return st, err
}

func stateInsert(ctx context.Context, st *sql.DB, pass int, keys []any) error {
	vals := strings.Repeat(",("+fmt.Sprint(pass)+",?)", len(keys))[1:]
	_, err := st.ExecContext(ctx, `INSERT OR IGNORE INTO seen(pass, id) VALUES `+vals, keys...)
	return err
}

// stateBlob stores the page's keys as one value in the state file: each
// key in its string form (contract.KeyString's, here the decimal id), NUL
// separated, gzip-free. One row per page, replaced when the page is read
// again.
func stateBlob(ctx context.Context, st *sql.DB, pass int, keys []any) error {
	var b []byte
	for _, k := range keys {
		b = strconv.AppendInt(b, k.(int64), 10)
		b = append(b, 0)
	}
	_, err := st.ExecContext(ctx, `INSERT OR REPLACE INTO seen_pages(pass, page, keys) VALUES (?, ?, ?)`, pass, keys[0], b)
	return err
}

// seenPasses runs one pass of every mode over n keys in pages of size and
// returns each pass's time. Each mode runs with a new pass id, so "table"
// and "state" do the work of a second full pass, not of a no-op re-insert.
func seenPasses(n, size int, page func(mode string, pass int, keys []any) error) (map[string]time.Duration, error) {
	out := map[string]time.Duration{}
	for pass, mode := range []string{"none", "table", "column", "state", "blob", "none"} {
		t0 := time.Now()
		keys := make([]any, 0, size)
		for id := 1; id <= n; id++ {
			keys = append(keys, int64(id))
			if len(keys) == size || id == n {
				if err := page(mode, pass+1, keys); err != nil {
					return nil, fmt.Errorf("%s: %w", mode, err)
				}
				keys = keys[:0]
			}
		}
		if d := time.Since(t0); out[mode] == 0 || d < out[mode] {
			out[mode] = d // "none" runs first and last; the faster counts
		}
	}
	return out, nil
}

func seenPostgres(pgURL, statePath string, n, size int) (map[string]time.Duration, error) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	st, err := openState(statePath)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if _, err := conn.Exec(ctx, `DROP TABLE IF EXISTS bench_seen_t, bench_seen;
		CREATE TABLE bench_seen_t (id bigint PRIMARY KEY, name text, email text, _idemsync_hash text, _idemsync_seen bigint);
		CREATE TABLE bench_seen (id bigint PRIMARY KEY, pass bigint);
		INSERT INTO bench_seen_t SELECT i, 'name ' || i, 'u' || i || '@example.com', md5(i::text), 0 FROM generate_series(1, `+fmt.Sprint(n)+`) i`); err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, `VACUUM ANALYZE bench_seen_t`); err != nil {
		return nil, err
	}
	defer conn.Exec(ctx, `DROP TABLE IF EXISTS bench_seen_t, bench_seen`)
	return seenPasses(n, size, func(mode string, pass int, keys []any) error {
		ids := make([]int64, len(keys))
		for i, k := range keys {
			ids[i] = k.(int64)
		}
		tx, err := conn.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		rows, err := tx.Query(ctx, `SELECT id, _idemsync_hash FROM bench_seen_t WHERE id = ANY($1)`, ids)
		if err != nil {
			return err
		}
		rows.Close()
		switch mode {
		case "table":
			_, err = tx.Exec(ctx, `INSERT INTO bench_seen(id, pass) SELECT unnest($1::bigint[]), $2 ON CONFLICT (id) DO UPDATE SET pass = excluded.pass`, ids, pass)
		case "column":
			_, err = tx.Exec(ctx, `UPDATE bench_seen_t SET _idemsync_seen = $2 WHERE id = ANY($1)`, ids, pass)
		case "state":
			err = stateInsert(ctx, st, pass, keys)
		case "blob":
			err = stateBlob(ctx, st, pass, keys)
		}
		if err != nil {
			return err
		}
		return tx.Commit(ctx)
	})
}

func seenDesignIn(pgURL string, n, size int) error {
	dir, err := os.MkdirTemp("", "idemsync-bench-seen-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	return seenDesign(dir, pgURL, n, size)
}
