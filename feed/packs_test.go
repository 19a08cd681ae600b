package feed_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/feed"
	"github.com/idemsync/idemsync/internal/pgtest"
	"github.com/idemsync/idemsync/sink/postgres"
	"github.com/idemsync/idemsync/sink/sinktest"
	"github.com/jackc/pgx/v5"
)

// A PostgreSQL feed kept by an earlier build, one row per event in a
// table idemsync_changes, is moved into packs when the feed is opened
// (docs/changes.md): its consumer reads on from where it was, in order,
// and a write after it is numbered after them.
func TestPostgresFeedOfSingleEventsMovesIntoPacks(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	schema := "feed_old_" + sinktest.RandomHex(4)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	t.Cleanup(func() { conn.Exec(context.Background(), `DROP SCHEMA `+schema+` CASCADE`) })
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+schema+`; SET search_path TO `+schema+`;
		CREATE TABLE idemsync_changes (job text NOT NULL, seq bigint NOT NULL, resource text NOT NULL, key text NOT NULL, op text NOT NULL,
			hash text, version text, run bigint, row text, at bigint NOT NULL, PRIMARY KEY (job, seq));
		CREATE TABLE idemsync_change_jobs (job text PRIMARY KEY, last bigint NOT NULL DEFAULT 0, run bigint, pruned_through bigint NOT NULL DEFAULT 0);
		CREATE TABLE idemsync_change_consumers (job text NOT NULL, consumer text NOT NULL, acked bigint NOT NULL DEFAULT 0,
			batch text, batch_through bigint, lease_until bigint, acked_at bigint, PRIMARY KEY (job, consumer));
		INSERT INTO idemsync_changes VALUES ('j', 1, 'items', '1', 'I', 'h1', NULL, 1, NULL, 0), ('j', 2, 'items', '2', 'I', 'h2', NULL, 1, NULL, 0),
			('j', 3, 'items', '1', 'U', 'h3', NULL, 1, NULL, 0);
		INSERT INTO idemsync_change_jobs VALUES ('j', 3, 1, 0);
		INSERT INTO idemsync_change_consumers (job, consumer, acked) VALUES ('j', 'mail', 1)`); err != nil {
		t.Fatal(err)
	}
	s, err := postgres.OpenTarget(ctx, contract.Conn{URL: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tbl := &contract.Table{Name: "items", Schema: schema, Key: []string{"id"}, Create: true,
		Columns: []contract.Column{{Name: "id", Type: contract.TypeInteger}, {Name: "v", Type: contract.TypeText}},
		Changes: &contract.Changes{Job: "j", Resource: "items", Run: 2}}
	if err := s.Prepare(ctx, tbl); err != nil {
		t.Fatal(err)
	}
	fd, err := s.FeedDB(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Upsert(ctx, tbl, []contract.Row{sinktest.Row(7, "x")}); err != nil {
		t.Fatal(err)
	}
	b, err := feed.Next(ctx, fd, "j", feed.Options{Consumer: "mail"})
	if err != nil {
		t.Fatal(err)
	}
	if got := keysOf(b); got != "I:2 U:1 I:7" || b.Events[2].Seq != 4 || b.Events[0].Hash != "h2" {
		t.Fatalf("after the move: %s %+v, want I:2 U:1 I:7 numbered 2 to 4", got, b.Events)
	}
}

// planCount sums, over the nodes of an EXPLAIN (ANALYZE, FORMAT JSON)
// plan of one type, the rows they produced and filtered out, every loop.
func planCount(node map[string]any, typ string) float64 {
	var n float64
	if node["Node Type"] == typ {
		loops, _ := node["Actual Loops"].(float64)
		rows, _ := node["Actual Rows"].(float64)
		removed, _ := node["Rows Removed by Filter"].(float64)
		n += (rows + removed) * loops
	}
	kids, _ := node["Plans"].([]any)
	for _, k := range kids {
		n += planCount(k.(map[string]any), typ)
	}
	return n
}

// A batch read from the middle of one large write statement's events
// costs the batch, not the statement (docs/changes.md, "Cost"): the
// events the reader's query expands, and the events held by the packs its
// batch comes from, are the same for a statement of 2,000 rows and one of
// 20,000. Before, a pack held a whole statement and the reader expanded
// all of it for every batch: a first load in pages of 200,000 rows read
// back in batches of 100 expanded 200,000 events 2,000 times.
func TestPostgresBatchReadCostFlatInStatementSize(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	const batch = 100
	type cost struct{ expanded, held float64 }
	costs := map[int]cost{}
	for _, size := range []int{2000, 20000} {
		tg := newTarget(t, "postgres", func(ctx context.Context) (contract.Sink, error) {
			return postgres.OpenTarget(ctx, contract.Conn{URL: url}, nil)
		})
		s, fd := tg.fed(t)
		t.Cleanup(func() {
			fd.DB.Exec(`DROP TABLE IF EXISTS "` + tg.tbl.Name + `"`)
			fd.DB.Exec(`DELETE FROM idemsync_change_packs WHERE job = $1`, tg.job)
			fd.DB.Exec(`DELETE FROM idemsync_change_jobs WHERE job = $1`, tg.job)
			fd.DB.Exec(`DELETE FROM idemsync_change_consumers WHERE job = $1`, tg.job)
		})
		ids := make([]int64, size)
		for i := range ids {
			ids[i] = int64(i + 1)
		}
		tg.write(t, s, ids, "a") // one statement
		after := int64(size/2 + 50)
		var plan []map[string]any
		var js []byte
		if err := fd.DB.QueryRowContext(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+feed.EventsQuery(fd, batch), tg.job, after, batch).Scan(&js); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(js, &plan); err != nil {
			t.Fatal(err)
		}
		var c cost
		c.expanded = planCount(plan[0]["Plan"].(map[string]any), "Function Scan")
		if err := fd.DB.QueryRowContext(ctx, `SELECT sum(hi - seq + 1) FROM idemsync_change_packs WHERE job = $1 AND hi > $2 AND seq <= $3`,
			tg.job, after, after+batch).Scan(&c.held); err != nil {
			t.Fatal(err)
		}
		costs[size] = c
		// The batch itself: the next 100 numbers, each row once.
		if _, err := feed.Reset(ctx, fd, tg.job, "c", strconv.FormatInt(after, 10)); err != nil {
			t.Fatal(err)
		}
		b, err := feed.Next(ctx, fd, tg.job, feed.Options{Consumer: "c", Limit: batch})
		if err != nil || len(b.Events) != batch {
			t.Fatalf("%d rows: batch %v, %v", size, b, err)
		}
		keys := map[string]bool{}
		for i, e := range b.Events {
			if e.Seq != after+1+int64(i) || e.Op != "I" || keys[e.Key] {
				t.Fatalf("%d rows: event %d of the batch is %+v", size, i, e)
			}
			keys[e.Key] = true
		}
	}
	t.Logf("a batch of %d: expanded/held by its packs %v", batch, costs)
	if small, large := costs[2000], costs[20000]; large != small || small.expanded > batch {
		t.Fatalf("a batch of %d read from a statement of 2,000 rows expanded %.0f events from packs holding %.0f; from one of 20,000, %.0f from packs holding %.0f: want the same, at most the batch expanded",
			batch, small.expanded, small.held, large.expanded, large.held)
	}
}

// A PostgreSQL feed kept by a build that wrote one pack per write
// statement, however large, has its large packs cut when the feed is
// opened (docs/changes.md, "Cost"): every event keeps its number, key,
// operation, hash and row, and a consumer inside a cut pack reads on
// from where it was.
func TestPostgresLargePacksOfAnEarlierBuildAreCut(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	conn, schema := pgtest.Schema(t, "feed_bigpack_")
	// One pack of 2,500 events (2,498 inserts, then a U and a D), no
	// versions, and one pack of 2 after it.
	if _, err := conn.Exec(ctx, `SET search_path TO `+schema+`;
		CREATE TABLE idemsync_change_packs (job text NOT NULL, hi bigint NOT NULL, seq bigint NOT NULL, resource text NOT NULL, run bigint, at bigint NOT NULL,
			ops text NOT NULL, keys text[] NOT NULL, hashes text[], versions text[], rows text[], PRIMARY KEY (job, hi));
		CREATE TABLE idemsync_change_jobs (job text PRIMARY KEY, last bigint NOT NULL DEFAULT 0, run bigint, pruned_through bigint NOT NULL DEFAULT 0);
		CREATE TABLE idemsync_change_consumers (job text NOT NULL, consumer text NOT NULL, acked bigint NOT NULL DEFAULT 0,
			batch text, batch_through bigint, lease_until bigint, acked_at bigint, PRIMARY KEY (job, consumer));
		INSERT INTO idemsync_change_packs SELECT 'j', 2500, 1, 'items', 1, 0, repeat('I', 2498) || 'UD',
			array_agg(g::text ORDER BY g), array_agg('h' || g ORDER BY g), NULL, array_agg('{"id":' || g || '}' ORDER BY g) FROM generate_series(1, 2500) g;
		INSERT INTO idemsync_change_packs VALUES ('j', 2502, 2501, 'items', 2, 0, 'II', '{a,b}', '{ha,hb}', '{v1,v2}', NULL);
		INSERT INTO idemsync_change_jobs VALUES ('j', 2502, 2, 0);
		INSERT INTO idemsync_change_consumers (job, consumer, acked) VALUES ('j', 'mail', 1200)`); err != nil {
		t.Fatal(err)
	}
	s, err := postgres.OpenTarget(ctx, contract.Conn{URL: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fd, err := s.FeedDB(ctx, &contract.Table{Name: "items", Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	var packs, largest int
	if err := fd.DB.QueryRowContext(ctx, `SELECT count(*), max(hi - seq + 1) FROM idemsync_change_packs`).Scan(&packs, &largest); err != nil {
		t.Fatal(err)
	}
	if packs != 4 || largest != 1000 {
		t.Fatalf("after opening: %d packs, the largest of %d events; want the 2,500 cut into 3, and the pack of 2", packs, largest)
	}
	var got []feed.Event
	for {
		b, err := feed.Next(ctx, fd, "j", feed.Options{Consumer: "mail", Limit: 700})
		if err != nil {
			t.Fatal(err)
		}
		if b.ID == "" {
			break
		}
		got = append(got, b.Events...)
		if _, err := feed.Ack(ctx, fd, "j", "mail", b.ID, 0); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 1302 {
		t.Fatalf("read %d events after 1200, want 1302", len(got))
	}
	for i, e := range got {
		seq := int64(1201 + i)
		want := feed.Event{Seq: seq, Resource: "items", Key: strconv.FormatInt(seq, 10), Op: "I", Hash: "h" + strconv.FormatInt(seq, 10), Run: 1,
			Row: json.RawMessage(`{"id":` + strconv.FormatInt(seq, 10) + `}`)}
		switch seq {
		case 2499:
			want.Op = "U"
		case 2500:
			want.Op = "D"
		case 2501, 2502:
			want = feed.Event{Seq: seq, Resource: "items", Key: string(rune('a' + seq - 2501)), Op: "I", Run: 2,
				Hash: "h" + string(rune('a'+seq-2501)), Version: "v" + strconv.FormatInt(seq-2500, 10)}
		}
		if e.Seq != want.Seq || e.Key != want.Key || e.Op != want.Op || e.Hash != want.Hash || e.Version != want.Version || e.Run != want.Run || string(e.Row) != string(want.Row) {
			t.Fatalf("event %d: %+v, want %+v", i, e, want)
		}
	}
}
