package feed_test

import (
	"context"
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
