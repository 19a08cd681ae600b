package main

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// record is the example API's record as a simple program decodes it.
type record struct {
	ID       int64                  `json:"id"`
	Name     string                 `json:"name"`
	Customer struct{ Email string } `json:"customer"`
	Total    json.Number            `json:"total"`
	Active   bool                   `json:"active"`
	Updated  time.Time              `json:"updated_at"`
	Tags     json.RawMessage        `json:"tags"`
}

// getPage fetches one page of the example API and decodes its records.
func getPage(url string) ([]record, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var page struct {
		Data       []record `json:"data"`
		NextCursor *string  `json:"next_cursor"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		return nil, err
	}
	return page.Data, nil
}

// baselineSQLite is the practical ceiling: fetch pages one after another,
// insert each page with a prepared INSERT in one transaction. No checkpoint,
// no hashing, no retries.
func baselineSQLite(api *fakeapi.Server, pages, size int, path string) (time.Duration, error) {
	db, err := sql.Open("sqlite", path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE orders (id INTEGER PRIMARY KEY, name TEXT, email TEXT, total TEXT, active INTEGER, updated_at TEXT, tags TEXT)`); err != nil {
		return 0, err
	}
	t0 := time.Now()
	for p := 1; p <= pages; p++ {
		recs, err := getPage(fmt.Sprintf("%s/page?page=%d&per_page=%d", api.URL, p, size))
		if err != nil {
			return 0, err
		}
		tx, err := db.Begin()
		if err != nil {
			return 0, err
		}
		stmt, err := tx.Prepare(`INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return 0, err
		}
		for _, r := range recs {
			if _, err := stmt.Exec(r.ID, r.Name, r.Customer.Email, r.Total.String(), r.Active, r.Updated.UTC().Format(time.RFC3339Nano), string(r.Tags)); err != nil {
				return 0, err
			}
		}
		stmt.Close()
		if err := tx.Commit(); err != nil {
			return 0, err
		}
	}
	return time.Since(t0), nil
}

// baselinePostgres fetches the same pages and loads each with a plain COPY
// into an empty table.
func baselinePostgres(api *fakeapi.Server, pgURL, table string, pages, size int) (time.Duration, error) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DROP TABLE IF EXISTS `+table+`; CREATE TABLE `+table+` (id bigint PRIMARY KEY, name text, email text, total numeric, active boolean, updated_at timestamptz, tags jsonb)`); err != nil {
		return 0, err
	}
	t0 := time.Now()
	for p := 1; p <= pages; p++ {
		recs, err := getPage(fmt.Sprintf("%s/page?page=%d&per_page=%d", api.URL, p, size))
		if err != nil {
			return 0, err
		}
		rows := make([][]any, len(recs))
		for i, r := range recs {
			rows[i] = []any{r.ID, r.Name, r.Customer.Email, r.Total.String(), r.Active, r.Updated, string(r.Tags)}
		}
		if _, err := conn.CopyFrom(ctx, pgx.Identifier{table}, []string{"id", "name", "email", "total", "active", "updated_at", "tags"}, pgx.CopyFromRows(rows)); err != nil {
			return 0, err
		}
	}
	return time.Since(t0), nil
}

// fetchOnly fetches pages one after another without writing them.
func fetchOnly(api *fakeapi.Server, path string, pages, size int) (time.Duration, error) {
	t0 := time.Now()
	for p := 1; p <= pages; p++ {
		if _, err := getPage(fmt.Sprintf("%s/page?page=%d&per_page=%d", api.URL, p, size)); err != nil {
			return 0, err
		}
	}
	_ = path
	return time.Since(t0), nil
}

// postgres measures the PostgreSQL figures, interleaved: the COPY loader,
// idemsync's first load and its unchanged re-sync, each with the WAL the
// server wrote meanwhile. fetches are the fetch-only ceiling's runs,
// measured with the SQLite figures.
func (b *bench) postgres(api *fakeapi.Server, pgURL string, records, pages, size, repeat int, fetches []measured) error {
	fmt.Printf("\n## PostgreSQL: %d records in pages of %d, no latency (median of %d runs)\n", records, size, repeat)
	ctx := context.Background()
	var bases, firsts, agains []measured
	var walBase, walFirst, walAgain []int64
	for i := range repeat {
		var base, first, again measured
		w, err := walBytes(pgURL, func() (err error) {
			base, err = loader("postgres", api, pages, size, pgURL)
			return err
		})
		if err != nil {
			return fmt.Errorf("postgres loader: %w", err)
		}
		walBase = append(walBase, w)
		if conn, err := pgx.Connect(ctx, pgURL); err == nil {
			_, _ = conn.Exec(ctx, `DROP TABLE IF EXISTS bench_orders`)
			conn.Close(ctx)
		}
		job := replaceTable(pageJob(api, size, 1, pgURL), "bench_orders")
		if w, err = walBytes(pgURL, func() (err error) {
			first, err = b.idemsync(fmt.Sprintf("pg-first-%d", i), job)
			return err
		}); err != nil {
			return err
		}
		walFirst = append(walFirst, w)
		if w, err = walBytes(pgURL, func() (err error) {
			again, err = b.idemsync(fmt.Sprintf("pg-again-%d", i), job)
			return err
		}); err != nil {
			return err
		}
		walAgain = append(walAgain, w)
		bases, firsts, agains = append(bases, base), append(firsts, first), append(agains, again)
	}
	base, first, again, fetch := median(bases), median(firsts), median(agains), median(fetches)
	b.table(records, []row{
		{"PostgreSQL loader (plain COPY per page)", base.wall, base.cpu, 0, 0},
		{"PostgreSQL idemsync first load", first.wall, first.cpu, first.rss, first.written},
		{"PostgreSQL idemsync unchanged re-sync", again.wall, again.cpu, again.rss, again.written},
	})
	mib := func(ws []int64) string {
		slices.Sort(ws)
		return fmt.Sprintf("%.1f MiB", float64(ws[len(ws)/2])/(1<<20))
	}
	fmt.Printf("WAL written (median, whole server): loader %s, first load %s, unchanged re-sync %s (goal 0; other databases' work counts too)\n",
		mib(walBase), mib(walFirst), mib(walAgain))
	if locked, err := lockedRows(pgURL, "bench_orders"); err == nil {
		fmt.Printf("rows of the table written or locked by the last unchanged re-sync (xmax set): %d (goal 0: then it wrote no WAL of its own)\n", locked)
	}
	fmt.Printf("ratio: first load %.2fx the loader's records/s (goal >= 1.0), CPU per record %.2fx the loader's (client process only; goal <= 1); re-sync %.2fx the fetch-only ceiling (goal >= 0.8), wrote %d rows (goal 0)\n",
		base.wall.Seconds()/first.wall.Seconds(), medianCPU(firsts).Seconds()/medianCPU(bases).Seconds(),
		fetch.wall.Seconds()/again.wall.Seconds(), again.written)
	ceilingCPU(fetches, agains)
	b.categories(records, "pg-first-0", "pg-again-0")
	return nil
}

// median returns the run with the median wall time.
func median(ms []measured) measured {
	sorted := slices.SortedFunc(slices.Values(ms), func(a, b measured) int { return cmp.Compare(a.wall, b.wall) })
	return sorted[len(sorted)/2]
}

func replaceTable(job, table string) string {
	out := []byte(job)
	return string(bytesReplace(out, []byte("table: orders"), []byte("table: "+table)))
}

func bytesReplace(s, old, new []byte) []byte {
	for i := 0; i+len(old) <= len(s); i++ {
		if string(s[i:i+len(old)]) == string(old) {
			return append(append(append([]byte{}, s[:i]...), new...), s[i+len(old):]...)
		}
	}
	return s
}

// medianCPU is the median CPU time of the runs.
func medianCPU(ms []measured) time.Duration {
	cpus := make([]time.Duration, len(ms))
	for i, m := range ms {
		cpus[i] = m.cpu
	}
	slices.Sort(cpus)
	return cpus[len(cpus)/2]
}

// ceilingCPU prints the unchanged re-sync against the fetch-only ceiling
// in CPU per record, the form of the ratio a loaded host does not blur:
// under load, wall times follow each process's share of the cores. The
// ceiling is what no writer can beat: the same pages of the same API, same
// size, one request at a time, fetched and decoded (into structs, by a
// process that does nothing else).
func ceilingCPU(fetches, agains []measured) {
	fmt.Printf("re-sync CPU per record: the fetch-only ceiling's is %.2fx the re-sync's (1.0: the re-sync costs no more CPU than fetching and decoding)\n",
		medianCPU(fetches).Seconds()/medianCPU(agains).Seconds())
}

// lockedRows counts the rows of table whose xmax is set: rows an UPDATE,
// a DELETE or a row lock touched since they were written. After a first
// load (xmax 0 everywhere) and an unchanged re-sync it is 0 only when the
// re-sync wrote, and so logged, nothing for that table, whatever else the
// server's WAL holds.
func lockedRows(pgURL, table string) (int64, error) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int64
	err = conn.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{table}.Sanitize()+` WHERE xmax::text <> '0'`).Scan(&n)
	return n, err
}
