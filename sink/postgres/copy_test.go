package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/postgres"
	"github.com/idemsync/idemsync/sink/sinktest"
	"github.com/jackc/pgx/v5"
)

// logBuf is a concurrency-safe buffer for a sink's debug log.
type logBuf struct {
	mu gosync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.b.Write(p) }
func (l *logBuf) String() string              { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// copySink opens a sink on b's server whose debug log (which says when a
// page was copied and when COPY gave way to the merge) is returned.
func copySink(t *testing.T) (contract.Sink, *logBuf) {
	t.Helper()
	var log logBuf
	s, err := postgres.OpenTarget(context.Background(), contract.Conn{URL: postgresURL(t)},
		slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, &log
}

const (
	logCopied  = "copied a page"
	logRefused = "COPY refused the page"
)

// copyTypesTable is a table of every column type and rows with values
// COPY's encoding could get wrong: text with tabs, newlines, backslashes
// and quotes, exact decimals beyond float64, timestamps below the
// microsecond in another zone, JSON with escapes, NULLs.
func copyTypesTable(b *sinktest.DB, name string) (*contract.Table, []contract.Row) {
	tbl := b.Table(name, []string{"id"},
		sinktest.Col("id", contract.TypeInteger), sinktest.Col("t", contract.TypeText), sinktest.Col("r", contract.TypeReal),
		sinktest.Col("n", contract.TypeNumeric), sinktest.Col("b", contract.TypeBoolean),
		sinktest.Col("ts", contract.TypeTimestamp), sinktest.Col("j", contract.TypeJSON))
	ist := time.FixedZone("IST", 5*3600+1800)
	var rows []contract.Row
	for i := range int64(6) {
		rows = append(rows, sinktest.Row(i+1, fmt.Sprintf("tab\there\nnew line \\N \\\\ back\\slash 'q' \"d\" ü %d", i),
			0.1+float64(i), fmt.Sprintf("-12345678901234567890.12345678901234567890%d", i), i%2 == 0,
			time.Date(2024, 5, 1, 17, 30, 0, 123456789, ist).Add(time.Duration(i)*time.Hour),
			fmt.Sprintf(`{"a":[1,2,{"b":null}],"esc":"\t\n\\\"","ü":"✓","i":%d}`, i)))
	}
	rows = append(rows, sinktest.Row(int64(7), "", nil, "0", nil, nil, `null`))
	rows = append(rows, sinktest.Row(int64(8), nil, nil, nil, nil, nil, nil))
	return tbl, rows
}

// A first load into an empty table is copied, and stores exactly what the
// merge stores: the same rows written into a table that already held a
// row (so the merge writes them) read back equal, column by column.
func TestCopyStoresWhatTheMergeStores(t *testing.T) {
	b := newPostgresBackend(t)
	s, log := copySink(t)
	copied, rows := copyTypesTable(b, "copied")
	merged, _ := copyTypesTable(b, "merged")
	got := copyAndMerge(t, b, s, log, copied, merged, rows)
	// And what the record said, where the column stores it as sent.
	for i, w := range sinktest.Want(t, copied, rows...) {
		for _, c := range []string{"t", "n", "j", "r", "b"} {
			if got[i][c] != w[c] {
				t.Errorf("row %d column %s = %q, want %q", i, c, got[i][c], w[c])
			}
		}
	}
}

// The values at the edges of COPY's binary encoding (copyenc.go) are
// stored as the merge stores them: decimals of every scale, sign and
// exponent either side of numeric's base-10,000 digits, timestamps
// before 1970 and 2000 and below the microsecond, floats at their limits
// and signed zero, empty text, JSON scalars.
func TestCopyStoresWhatTheMergeStoresAtTheEdges(t *testing.T) {
	b := newPostgresBackend(t)
	s, log := copySink(t)
	numerics := []string{"0", "-0", "0.0", "-0.000", "00000", "0e5", "0e-5", ".0", "1", "-1", "+1", "9999", "10000", "-10000",
		"10001", "100000000", "0.1", "0.0001", "0.00001", "0.00000001", "-1.50", "1.0000", "12.340000", "1e1", "1e3", "1e4",
		"1e5", "1E8", "1e-1", "1e-4", "1e-5", "-2.5e-7", "123.456e2", "123.456e-2", "1.5e+3", "15e-1", "000123.4500",
		"-00.00100", ".5", "5.", "-.5e3", "12345678901234567890.123456789012345678901", "1e300", "-1e-300"}
	times := []time.Time{time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC), time.Date(1999, 12, 31, 23, 59, 59, 500, time.UTC),
		time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(1850, 3, 4, 5, 6, 7, 890, time.FixedZone("LMT", -17762))}
	reals := []any{math.Copysign(0, -1), -1e308, 5e-324, math.MaxFloat64, 1.0 / 3}
	texts := []any{"", " ", `\x00`, `\.`}
	jsons := []any{`null`, `"s"`, `1.50`, `[]`, `{"b":1,"a":[true,false]}`}
	var rows []contract.Row
	for i, n := range numerics {
		rows = append(rows, sinktest.Row(int64(i), texts[i%len(texts)], reals[i%len(reals)], n, i%2 == 0, times[i%len(times)], jsons[i%len(jsons)]))
	}
	copied, _ := copyTypesTable(b, "edges_copied")
	merged, _ := copyTypesTable(b, "edges_merged")
	copyAndMerge(t, b, s, log, copied, merged, rows)
}

// copyAndMerge writes rows into copied, empty (so COPY writes them), and
// into merged after a row of its own (so the merge does), and fails t
// unless both read back equal but for the synced-at times; it returns
// copied's rows.
func copyAndMerge(t *testing.T, b *sinktest.DB, s contract.Sink, log *logBuf, copied, merged *contract.Table, rows []contract.Row) []map[string]string {
	t.Helper()
	sinktest.MustPrepare(t, s, copied)
	sinktest.MustUpsert(t, s, copied, contract.Counts{Inserted: int64(len(rows))}, rows...)
	if !strings.Contains(log.String(), logCopied) || strings.Contains(log.String(), logRefused) {
		t.Fatalf("the first load into an empty table was not copied; log:\n%s", log)
	}
	sinktest.MustPrepare(t, s, merged)
	other := sinktest.Row(int64(100000), "x", nil, nil, nil, nil, nil)
	b.Exec(t, "INSERT INTO "+sinktest.QName(merged)+" (id, t, _idemsync_hash, _idemsync_synced_at) VALUES (100000, 'x', '"+other.Hash+"', now())")
	before := strings.Count(log.String(), logCopied)
	sinktest.MustPrepare(t, s, merged) // finds the table holding a row
	sinktest.MustUpsert(t, s, merged, contract.Counts{Inserted: int64(len(rows))}, rows...)
	if n := strings.Count(log.String(), logCopied); n != before {
		t.Fatalf("a page into a table holding another row was copied; log:\n%s", log)
	}
	got, want := b.Read(t, copied), b.Read(t, merged)
	want = want[:len(want)-1] // id 100000
	for i := range want {
		if got[i][contract.ColSyncedAt] == "NULL" {
			t.Errorf("row %d: no synced-at", i)
		}
		delete(want[i], contract.ColSyncedAt) // the time of each write
	}
	sinktest.AssertRows(t, got, want)
	return got
}

// A key met again by a later page of a first load makes COPY fail (unique
// violation): the page is written by the merge instead, from its start,
// with nothing lost or written twice, and the pages after it too.
func TestCopyConflictFallsBackToMerge(t *testing.T) {
	b := newPostgresBackend(t)
	s, log := copySink(t)
	tbl := sinktest.People(b)
	sinktest.MustPrepare(t, s, tbl)
	a, bb := sinktest.Row("a", "A", int64(1)), sinktest.Row("b", "B", int64(1))
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 2}, a, bb)
	c, a2, d := sinktest.Row("c", "C", int64(1)), sinktest.Row("a", "A2", int64(2)), sinktest.Row("d", "D", int64(1))
	// a2 in the middle of the page: COPY has sent c before it fails.
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 2, Updated: 1}, c, a2, d)
	if !strings.Contains(log.String(), logRefused) || !strings.Contains(log.String(), "23505") {
		t.Fatalf("the page meeting a stored key was not handed to the merge; log:\n%s", log)
	}
	e := sinktest.Row("e", "E", int64(1))
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 1, Unchanged: 1}, e, bb)
	if n := strings.Count(log.String(), logCopied); n != 1 {
		t.Errorf("%d pages copied, want 1 (the first): COPY is off for the table after a conflict", n)
	}
	sinktest.AssertRows(t, b.Read(t, tbl), sinktest.Want(t, tbl, a2, bb, c, d, e))
}

// A value the server refuses in the middle of a copied page fails the
// page as the merge would, and leaves nothing of it: the rows COPY sent
// before it are rolled back.
func TestCopyRefusedValueWritesNothing(t *testing.T) {
	b := newPostgresBackend(t)
	s, _ := copySink(t)
	tbl := b.Table("events", []string{"id"}, sinktest.Col("id", contract.TypeInteger), sinktest.Col("ts", contract.TypeTimestamp))
	sinktest.MustPrepare(t, s, tbl)
	var rows []contract.Row
	for i := range int64(100) {
		ts := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
		if i == 50 {
			ts = time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC) // past timestamptz's range
		}
		rows = append(rows, sinktest.Row(i, ts))
	}
	_, err := s.Upsert(context.Background(), tbl, rows)
	var ce *contract.Error
	if !errors.As(err, &ce) || ce.Class != contract.Permanent {
		t.Fatalf("upsert of an out-of-range timestamp: %v, want a permanent error", err)
	}
	if got := b.Rows(t, "SELECT count(*) FROM "+sinktest.QName(tbl)); got[0][0] != int64(0) {
		t.Errorf("%v rows stored after the page failed, want 0", got[0][0])
	}
}

// A connection killed in the middle of a COPY (the process or the server
// gone) loses the page's transaction whole: no row of it is stored, and
// the next sink writes the page again in full.
func TestCopyKilledMidwayWritesNothing(t *testing.T) {
	b := newPostgresBackend(t)
	s, _ := copySink(t)
	tbl := sinktest.People(b)
	sinktest.MustPrepare(t, s, tbl)
	rows := make([]contract.Row, 200_000)
	for i := range rows {
		rows[i] = sinktest.Row(fmt.Sprintf("k%06d", i), strings.Repeat("n", 200), int64(i))
	}
	upsertKilledMidCopy(t, b, s, tbl, rows)
	if got := b.Rows(t, "SELECT count(*) FROM "+sinktest.QName(tbl)); got[0][0] != int64(0) {
		t.Fatalf("%v rows stored by a page whose COPY was killed, want 0", got[0][0])
	}
	s2, _ := copySink(t)
	sinktest.MustPrepare(t, s2, tbl)
	sinktest.MustUpsert(t, s2, tbl, contract.Counts{Inserted: int64(len(rows))}, rows...)
}

// A table with a trigger of its own is not copied (a BEFORE trigger may
// keep a row out), with the change feed on or off: only the feed's own
// triggers let COPY write a page (copyfeed_test.go).
func TestCopyOffWithTrigger(t *testing.T) {
	b := newPostgresBackend(t)
	s, log := copySink(t)
	b.Exec(t, `CREATE FUNCTION `+pgQuote(b.Schema)+`.skip_x() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.id = 'x' THEN RETURN NULL; END IF; RETURN NEW; END $$`)
	for _, fed := range []bool{false, true} {
		trig := b.Table(fmt.Sprintf("trig_%t", fed), []string{"id"}, sinktest.Col("id", contract.TypeText), sinktest.Col("name", contract.TypeText))
		if fed {
			trig.Changes = &contract.Changes{Job: "feed_" + sinktest.RandomHex(4), Resource: "trig", Run: 1}
		}
		sinktest.MustPrepare(t, s, trig)
		b.Exec(t, `CREATE TRIGGER skip_x BEFORE INSERT ON `+sinktest.QName(trig)+` FOR EACH ROW EXECUTE FUNCTION `+pgQuote(b.Schema)+`.skip_x()`)
		sinktest.MustPrepare(t, s, trig)
		sinktest.MustUpsert(t, s, trig, contract.Counts{Inserted: 1, Dropped: 1}, sinktest.Row("x", "X"), sinktest.Row("y", "Y"))
		if strings.Contains(log.String(), logCopied) {
			t.Fatalf("a table with a trigger of its own (feed %t) was copied; log:\n%s", fed, log)
		}
	}
}

func pgQuote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// upsertKilledMidCopy upserts rows into tbl with s while another
// connection terminates the backend running a COPY in b's schema; it
// skips the test when the COPY ended before it could be killed, and fails
// it when the upsert succeeded all the same.
func upsertKilledMidCopy(t *testing.T, b *sinktest.DB, s contract.Sink, tbl *contract.Table, rows []contract.Row) {
	t.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, postgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	killed := make(chan int, 1)
	go func() {
		defer close(killed)
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			var n int
			err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
				WHERE state = 'active' AND query ILIKE 'copy %' AND query LIKE '%' || $1 || '%'`, b.Schema).Scan(&n)
			if err != nil || n > 0 {
				killed <- n
				return
			}
		}
	}()
	_, err = s.Upsert(ctx, tbl, rows)
	if n := <-killed; n == 0 {
		t.Skipf("the COPY finished before it could be killed (upsert: %v)", err)
	}
	if err == nil {
		t.Fatal("upsert succeeded although its connection was killed mid-COPY")
	}
}
