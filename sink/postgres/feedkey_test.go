package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/postgres"
	"github.com/idemsync/idemsync/sink/sinktest"
)

// A row's key in the change feed is one text whatever the settings of
// the session that wrote it (docs/changes.md, Events): a timestamp key
// written by a host whose connection has another TimeZone and DateStyle
// (PGTZ, ?timezone= in the URL, ALTER ROLE … SET) and deleted by another
// tool's session, and a real key written with extra_float_digits below
// 1, name the row as a session in UTC does, and two rows with different
// real keys are two keys in the feed. A trigger function an earlier build
// made without these settings is replaced by the next Prepare.
func TestFeedKeyTextIgnoresSessionSettings(t *testing.T) {
	b := newPostgresBackend(t)
	ctx := context.Background()
	job := "feedkey_" + sinktest.RandomHex(4)
	url := postgresURL(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	odd := url + sep + "timezone=Asia/Kolkata&datestyle=SQL,%20DMY&extra_float_digits=-3"
	utc, err := postgres.OpenTarget(ctx, contract.Conn{URL: url + sep + "timezone=UTC"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer utc.Close()
	far, err := postgres.OpenTarget(ctx, contract.Conn{URL: odd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer far.Close()

	one := b.Table("one", []string{"at"}, sinktest.Col("at", contract.TypeTimestamp),
		sinktest.Col("v", contract.TypeText), sinktest.Col("ver", contract.TypeTimestamp))
	one.Version = "ver"
	one.Changes = &contract.Changes{Job: job, Resource: "one", Run: 1}
	two := b.Table("two", []string{"at", "score"}, sinktest.Col("at", contract.TypeTimestamp),
		sinktest.Col("score", contract.TypeReal), sinktest.Col("v", contract.TypeText))
	two.Changes = &contract.Changes{Job: job, Resource: "two", Run: 1}

	at := time.Date(2024, 5, 1, 12, 0, 0, 500_000_000, time.UTC)
	ver1, ver2 := at.Add(time.Hour), at.Add(2*time.Hour)
	sinktest.MustPrepare(t, utc, one)
	sinktest.MustPrepare(t, utc, two)
	// The functions as an earlier build made them, with the grouping's
	// setting alone: the next Prepare replaces them.
	b.Exec(t, `DO $$ DECLARE f regprocedure; BEGIN
		FOR f IN SELECT oid::regprocedure FROM pg_proc WHERE pronamespace = '`+pgQuote(b.Schema)+`'::regnamespace AND proname LIKE 'idemsync_feed_%' LOOP
			EXECUTE format('ALTER FUNCTION %s RESET ALL', f);
			EXECUTE format('ALTER FUNCTION %s SET enable_hashagg = off', f);
		END LOOP; END $$`)
	made := func() string { // the feed functions and the transactions that last wrote them
		return fmt.Sprint(b.Rows(t, `SELECT proname::text, xmin::text FROM pg_proc WHERE pronamespace = '`+pgQuote(b.Schema)+
			`'::regnamespace AND proname LIKE 'idemsync_feed_%' ORDER BY 1`))
	}
	for _, s := range []contract.Sink{utc, far} {
		sinktest.MustPrepare(t, s, one)
		sinktest.MustPrepare(t, s, two)
	}
	// Replaced once: a Prepare of an unchanged table leaves them be.
	was := made()
	sinktest.MustPrepare(t, far, one)
	sinktest.MustPrepare(t, far, two)
	if now := made(); now != was {
		t.Fatalf("an unchanged Prepare replaced the feed functions: %s, then %s", was, now)
	}
	sinktest.MustUpsert(t, utc, one, contract.Counts{Inserted: 1}, sinktest.Row(at, "a", ver1))
	sinktest.MustUpsert(t, utc, two, contract.Counts{Inserted: 1}, sinktest.Row(at, 0.30000000000000004, "a"))
	sinktest.MustUpsert(t, far, one, contract.Counts{Updated: 1}, sinktest.Row(at, "b", ver2))
	sinktest.MustUpsert(t, far, two, contract.Counts{Updated: 1, Inserted: 1},
		sinktest.Row(at, 0.30000000000000004, "b"), sinktest.Row(at, 0.3, "c"))
	b.Exec(t, `SET timezone = 'America/St_Johns'; SET datestyle = 'German'; SET extra_float_digits = 0;
		DELETE FROM `+sinktest.QName(one)+`; DELETE FROM `+sinktest.QName(two)+` WHERE v = 'b'; RESET ALL`)

	rows := b.Rows(t, `SELECT resource, op, key, COALESCE(version, '') FROM `+pgQuote(b.Schema)+
		`.idemsync_changes WHERE job = '`+job+`' ORDER BY seq`)
	keys := map[string][]string{} // resource → keys in event order
	var versions []string
	for _, r := range rows {
		res, op, key, ver := r[0].(string), r[1].(string), r[2].(string), r[3].(string)
		keys[res] = append(keys[res], op+" "+key)
		if res == "one" && op != "D" {
			versions = append(versions, ver)
		}
	}
	k1 := "2024-05-01 12:00:00.5+00"
	k2 := `["2024-05-01T12:00:00.5+00:00",0.30000000000000004]`
	k3 := `["2024-05-01T12:00:00.5+00:00",0.3]`
	sameEvents(t, "table one", keys["one"], []string{"I " + k1, "U " + k1, "D " + k1})
	sameEvents(t, "table two", keys["two"], []string{"I " + k2, "U " + k2, "I " + k3, "D " + k2})
	sameEvents(t, "versions of table one", versions, []string{"2024-05-01 13:00:00.5+00", "2024-05-01 14:00:00.5+00"})
}
