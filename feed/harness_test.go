package feed_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/postgres"
	"github.com/idemsync/idemsync/sink/sinktest"
	"github.com/idemsync/idemsync/sink/sqlite"
)

// target is one database under test: it opens sinks on the same database
// (each its own connection, as separate processes would) and names a
// fresh fed table and job.
type target struct {
	name string
	open func(t *testing.T) contract.Sink
	tbl  *contract.Table
	job  string
}

// eachTarget runs fn on a fresh SQLite file and, when
// IDEMSYNC_TEST_POSTGRES_URL is set, on PostgreSQL.
func eachTarget(t *testing.T, fn func(t *testing.T, tg *target)) {
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "target.db")
		fn(t, newTarget(t, "sqlite", func(ctx context.Context) (contract.Sink, error) {
			return sqlite.OpenTarget(ctx, contract.Conn{URL: "sqlite:" + path}, nil)
		}))
	})
	t.Run("postgres", func(t *testing.T) {
		url := os.Getenv("IDEMSYNC_TEST_POSTGRES_URL")
		if url == "" {
			t.Skip("IDEMSYNC_TEST_POSTGRES_URL not set")
		}
		tg := newTarget(t, "postgres", func(ctx context.Context) (contract.Sink, error) {
			return postgres.OpenTarget(ctx, contract.Conn{URL: url}, nil)
		})
		t.Cleanup(func() {
			s, err := postgres.Open(context.Background(), url, nil)
			if err != nil {
				return
			}
			defer s.Close()
			fd, err := s.FeedDB(context.Background(), tg.tbl)
			if err != nil {
				return
			}
			fd.DB.Exec(`DROP TABLE IF EXISTS "` + tg.tbl.Name + `"`)
			for _, tb := range []string{"idemsync_change_packs", "idemsync_change_jobs", "idemsync_change_consumers"} {
				fd.DB.Exec(`DELETE FROM `+tb+` WHERE job = $1`, tg.job)
			}
		})
		fn(t, tg)
	})
}

func newTarget(t *testing.T, name string, open func(context.Context) (contract.Sink, error)) *target {
	suffix := sinktest.RandomHex(4)
	tg := &target{name: name, job: "job_" + suffix,
		tbl: &contract.Table{Name: "items_" + suffix, Key: []string{"id"}, Create: true,
			Columns: []contract.Column{{Name: "id", Type: contract.TypeInteger}, {Name: "v", Type: contract.TypeText}}}}
	tg.tbl.Changes = &contract.Changes{Job: tg.job, Resource: "items", Run: 1}
	tg.open = func(t *testing.T) contract.Sink {
		t.Helper()
		s, err := open(context.Background())
		if err != nil {
			t.Fatalf("open %s: %v", name, err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	return tg
}

// fed opens a sink with the fed table prepared and returns it with its
// feed database.
func (tg *target) fed(t *testing.T) (contract.Sink, contract.FeedDB) {
	t.Helper()
	s := tg.open(t)
	tbl := *tg.tbl
	c := *tg.tbl.Changes
	tbl.Changes = &c
	if err := s.Prepare(context.Background(), &tbl); err != nil {
		t.Fatalf("prepare: %v", err)
	}
	fd, err := s.FeedDB(context.Background(), &tbl)
	if err != nil {
		t.Fatalf("FeedDB: %v", err)
	}
	return s, fd
}

// write upserts rows (id, v) into the fed table through s.
func (tg *target) write(t testing.TB, s contract.Sink, ids []int64, v string) {
	t.Helper()
	var rows []contract.Row
	for _, id := range ids {
		rows = append(rows, sinktest.Row(id, v))
	}
	if _, err := s.Upsert(context.Background(), tg.tbl, rows); err != nil {
		t.Fatalf("upsert: %v", err)
	}
}
