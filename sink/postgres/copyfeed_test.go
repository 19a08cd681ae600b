package postgres_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sinktest"
)

// feedOf returns job's events as "op key hash version row", in seq order,
// and checks their numbers are contiguous from the first (one writer, no
// rolled-back write in between).
func feedOf(t *testing.T, b *sinktest.DB, job string) []string {
	t.Helper()
	rows := b.Rows(t, `SELECT seq, op, key, COALESCE(hash, ''), COALESCE(version, ''), COALESCE("row"::jsonb::text, ''), run, resource
		FROM `+pgQuote(b.Schema)+`.idemsync_changes WHERE job = '`+job+`' ORDER BY seq`)
	var out []string
	for i, r := range rows {
		if i > 0 && r[0].(int64) != rows[i-1][0].(int64)+1 {
			t.Errorf("event %d follows event %d: a number was skipped", r[0], rows[i-1][0])
		}
		out = append(out, fmt.Sprintf("%s %s %s %s %s run=%d %s", r[1], r[2], r[3], r[4], r[5], r[6], r[7]))
	}
	return out
}

// sameEvents fails t unless got and want hold the same events, in order.
func sameEvents(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s: events\n%s\nwant\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// fedVersioned is a fed table with a version column whose events carry
// the row, for job.
func fedVersioned(b *sinktest.DB, name, job string) (*contract.Table, [][]contract.Row) {
	tbl, rows := copyTypesTable(b, name)
	tbl.Version = "ts"
	tbl.Changes = &contract.Changes{Job: job, Resource: "things", Run: 3, Rows: true}
	return tbl, [][]contract.Row{rows[:4], rows[4:]}
}

// With the change feed on, a first load into an empty table is copied,
// and its events are exactly those the merge records for the same pages:
// one I per row with its key, hash, version and row, numbered in order.
func TestCopyWithFeedRecordsWhatTheMergeRecords(t *testing.T) {
	b := newPostgresBackend(t)
	s, log := copySink(t)
	jobC, jobM := "copied_"+sinktest.RandomHex(4), "merged_"+sinktest.RandomHex(4)
	copied, pages := fedVersioned(b, "copied", jobC)
	sinktest.MustPrepare(t, s, copied)
	for _, p := range pages {
		sinktest.MustUpsert(t, s, copied, contract.Counts{Inserted: int64(len(p))}, p...)
	}
	if n := strings.Count(log.String(), logCopied); n != len(pages) || strings.Contains(log.String(), logRefused) {
		t.Fatalf("%d of %d pages copied into an empty fed table; log:\n%s", n, len(pages), log)
	}

	// The same pages into a fed table holding a row: the merge writes them.
	merged, _ := fedVersioned(b, "merged", jobM)
	sinktest.MustPrepare(t, s, merged)
	b.Exec(t, "INSERT INTO "+sinktest.QName(merged)+" (id, _idemsync_hash, _idemsync_synced_at) VALUES (100, 'h', now())")
	before := strings.Count(log.String(), logCopied)
	sinktest.MustPrepare(t, s, merged)
	for _, p := range pages {
		sinktest.MustUpsert(t, s, merged, contract.Counts{Inserted: int64(len(p))}, p...)
	}
	if n := strings.Count(log.String(), logCopied); n != before {
		t.Fatalf("a page into a table holding another row was copied; log:\n%s", log)
	}
	want := feedOf(t, b, jobM)[1:] // the hand-inserted row's event first
	got := feedOf(t, b, jobC)
	sameEvents(t, "copied vs merged", got, want)
	if len(got) != len(pages[0])+len(pages[1]) {
		t.Fatalf("%d events for %d rows", len(got), len(pages[0])+len(pages[1]))
	}
	for _, e := range got {
		if !strings.HasPrefix(e, "I ") || strings.Contains(e, " {") == false || !strings.Contains(e, "run=3 things") {
			t.Errorf("event %q: want an insert carrying its row, run 3, resource things", e)
		}
	}
	// An unchanged re-sync of the copied table records nothing.
	for _, p := range pages {
		sinktest.MustUpsert(t, s, copied, contract.Counts{Unchanged: int64(len(p))}, p...)
	}
	sameEvents(t, "after an unchanged re-sync", feedOf(t, b, jobC), got)
}

// A COPY that fails mid-page with the feed on (a key met again) leaves no
// event: the merge writes the page and its events are exactly the
// merge's: I for the new keys, U for the key met again, nothing twice.
func TestCopyWithFeedFallbackRecordsTheMergesEvents(t *testing.T) {
	b := newPostgresBackend(t)
	s, log := copySink(t)
	job := "feed_" + sinktest.RandomHex(4)
	tbl := sinktest.People(b)
	tbl.Changes = &contract.Changes{Job: job, Resource: "people", Run: 1}
	sinktest.MustPrepare(t, s, tbl)
	a, bb := sinktest.Row("a", "A", int64(1)), sinktest.Row("b", "B", int64(1))
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 2}, a, bb)
	if !strings.Contains(log.String(), logCopied) {
		t.Fatalf("the first page into an empty fed table was not copied; log:\n%s", log)
	}
	c, a2, d := sinktest.Row("c", "C", int64(1)), sinktest.Row("a", "A2", int64(2)), sinktest.Row("d", "D", int64(1))
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 2, Updated: 1}, c, a2, d)
	if !strings.Contains(log.String(), logRefused) {
		t.Fatalf("the page meeting a stored key was not handed to the merge; log:\n%s", log)
	}
	var got []string
	for _, e := range feedOf(t, b, job) {
		f := strings.Fields(e)
		got = append(got, f[0]+":"+f[1]+":"+f[2])
	}
	if len(got) > 2 {
		sort.Strings(got[2:]) // one statement's events are numbered in no particular order
	}
	h := func(r contract.Row) string { return r.Hash }
	sameEvents(t, "after the fallback", got, []string{
		"I:a:" + h(a), "I:b:" + h(bb), // page 1, copied
		"I:c:" + h(c), "I:d:" + h(d), "U:a:" + h(a2), // page 2, merged
	})
	sinktest.AssertRows(t, b.Read(t, tbl), sinktest.Want(t, tbl, a2, bb, c, d))
}

// A connection killed in the middle of a fed COPY loses the page whole:
// no row, no event, the feed's counter where it was; the next sink writes
// the page and records each row's event once.
func TestCopyWithFeedKilledMidwayRecordsNothing(t *testing.T) {
	b := newPostgresBackend(t)
	s, _ := copySink(t)
	job := "feed_" + sinktest.RandomHex(4)
	tbl := sinktest.People(b)
	tbl.Changes = &contract.Changes{Job: job, Resource: "people", Run: 1}
	sinktest.MustPrepare(t, s, tbl)
	rows := make([]contract.Row, 200_000)
	for i := range rows {
		rows[i] = sinktest.Row(fmt.Sprintf("k%06d", i), strings.Repeat("n", 200), int64(i))
	}
	counter := func() []any {
		return b.Rows(t, `SELECT COALESCE((SELECT last FROM `+pgQuote(b.Schema)+`.idemsync_change_jobs WHERE job = '`+job+`'), 0)`)[0]
	}
	last := counter()
	upsertKilledMidCopy(t, b, s, tbl, rows)
	if got := b.Rows(t, "SELECT count(*) FROM "+sinktest.QName(tbl)); got[0][0] != int64(0) {
		t.Fatalf("%v rows stored by a page whose COPY was killed, want 0", got[0][0])
	}
	if got := feedOf(t, b, job); len(got) != 0 || fmt.Sprint(counter()) != fmt.Sprint(last) {
		t.Fatalf("%d events and counter %v after a killed COPY, want none and %v", len(got), counter(), last)
	}
	s2, log := copySink(t)
	sinktest.MustPrepare(t, s2, tbl)
	sinktest.MustUpsert(t, s2, tbl, contract.Counts{Inserted: int64(len(rows))}, rows...)
	if !strings.Contains(log.String(), logCopied) {
		t.Errorf("the page written again was not copied; log:\n%s", log)
	}
	// Counted in the packs: the view expands a pack's ops letter by letter.
	packs := pgQuote(b.Schema) + ".idemsync_change_packs"
	got := b.Rows(t, `SELECT sum(hi - seq + 1)::bigint, (SELECT count(DISTINCT k) FROM `+packs+` p CROSS JOIN LATERAL unnest(p.keys) k WHERE p.job = '`+job+`'),
		bool_and(ops NOT LIKE '%U%' AND ops NOT LIKE '%D%') FROM `+packs+` WHERE job = '`+job+`'`)[0]
	if fmt.Sprint(got) != fmt.Sprintf("[%d %d true]", len(rows), len(rows)) {
		t.Fatalf("events after the page was written again: count, keys, ops %v, want one I per row (%d)", got, len(rows))
	}
}
