package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/postgres"
	"github.com/idemsync/idemsync/sink/sinktest"
	"github.com/idemsync/idemsync/sink/sqlkit"
	"github.com/jackc/pgx/v5"
)

// secret is a password that must never show up in an error or a log line.
const secret = "Sup3r-S3cret-Pa55"

// freePort returns a TCP port on 127.0.0.1 that nothing listens on.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// openFails opens rawURL, expects failure with exit code want, and checks
// that neither the error, its hint nor the logs contain the secret.
func openFails(t *testing.T, rawURL string, want contract.Class, mustSay ...string) {
	t.Helper()
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, err := postgres.Open(context.Background(), rawURL, logger)
	if err == nil {
		s.Close()
		t.Fatalf("open %s succeeded, want a %v failure", sqlkit.RedactURL(rawURL), want)
	}
	if got := contract.ClassOf(err); got != want {
		t.Errorf("class %v, want %v (%v)", got, want, err)
	}
	text := err.Error() + "\n" + contract.Hint(err) + "\n" + fmt.Sprintf("%+v", err) + "\n" + logs.String()
	if strings.Contains(text, secret) || strings.Contains(text, url.QueryEscape(secret)) {
		t.Errorf("password leaked: %s", text)
	}
	for _, m := range mustSay {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("error %q does not say %q", err, m)
		}
	}
	t.Logf("%v: %v (hint: %s)", contract.ClassOf(err), err, contract.Hint(err))
}

func TestPostgresUnreachable(t *testing.T) {
	port := freePort(t)
	openFails(t, fmt.Sprintf("postgres://app:%s@127.0.0.1:%d/db?sslmode=disable", secret, port),
		contract.Transient, fmt.Sprintf("127.0.0.1:%d", port))
	// key=value form
	openFails(t, fmt.Sprintf("postgres://127.0.0.1:%d/db?sslmode=disable&password=%s", port, secret),
		contract.Transient, fmt.Sprintf("127.0.0.1:%d", port))
}

func TestPostgresConnectTimeout(t *testing.T) {
	// A server that accepts the connection and never answers.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	start := time.Now()
	openFails(t, fmt.Sprintf("postgres://app:%s@%s/db?sslmode=disable&connect_timeout=1", secret, l.Addr()),
		contract.Transient, "timed out", l.Addr().String())
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("connect_timeout=1 took %v", d)
	}
}

func TestPostgresBadURL(t *testing.T) {
	openFails(t, "postgres://app:"+secret+"@127.0.0.1:notaport/db", contract.Invalid)
}

func TestPostgresWrongPassword(t *testing.T) {
	raw := postgresURL(t)
	cfg, err := pgx.ParseConfig(raw)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		t.Skipf("%s is not a postgres:// URL with a host", pgEnv)
	}
	u.User = url.UserPassword(cfg.User, secret)
	wrong := u.String()
	if s, err := postgres.Open(context.Background(), wrong, nil); err == nil {
		s.Close()
		t.Skip("the test server accepts any password (trust authentication)")
	}
	openFails(t, wrong, contract.Permanent,
		fmt.Sprintf("authentication failed for user %q at %s:%d", cfg.User, cfg.Host, cfg.Port))
}

// BenchmarkPostgresUpsert upserts 100,000 records in pages of 1,000 and
// reports records/s for a first load into an empty table, for an unchanged
// re-sync of the same records (also with Table.Verify, as run --verify
// compares them), and for a plain COPY of the same pages into
// an empty table (the floor the sink's COPY + INSERT … ON CONFLICT is
// measured against).
func BenchmarkPostgresUpsert(b *testing.B) {
	raw := postgresURL(b)
	const total, pageSize = 100_000, 1_000
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, raw)
	if err != nil {
		b.Fatal(err)
	}
	schema := "idemsync_bench_" + sinktest.RandomHex(4)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
		conn.Close(ctx)
	})
	s, err := postgres.Open(ctx, raw, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()

	pages := sinktest.BenchPages(total, pageSize)
	newTable := func(name string) *contract.Table { return sinktest.BenchTable(schema, name) }
	load := func(b *testing.B, tbl *contract.Table) contract.Counts {
		var sum contract.Counts
		for _, page := range pages {
			n, err := s.Upsert(ctx, tbl, page)
			if err != nil {
				b.Fatal(err)
			}
			sum.Add(n)
		}
		return sum
	}
	report := func(b *testing.B) {
		b.ReportMetric(float64(total)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	}

	b.Run("first_load", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			tbl := newTable(fmt.Sprintf("first_%d_%s", i, sinktest.RandomHex(3)))
			if err := s.Prepare(ctx, tbl); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if n := load(b, tbl); n.Inserted != total {
				b.Fatalf("inserted %d, want %d", n.Inserted, total)
			}
		}
		report(b)
	})
	b.Run("unchanged", func(b *testing.B) {
		tbl := newTable("unchanged_" + sinktest.RandomHex(3))
		if err := s.Prepare(ctx, tbl); err != nil {
			b.Fatal(err)
		}
		load(b, tbl)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if n := load(b, tbl); n.Unchanged != total {
				b.Fatalf("unchanged %d, want %d", n.Unchanged, total)
			}
		}
		report(b)
	})
	b.Run("verify_unchanged", func(b *testing.B) {
		tbl := newTable("verify_" + sinktest.RandomHex(3))
		if err := s.Prepare(ctx, tbl); err != nil {
			b.Fatal(err)
		}
		load(b, tbl)
		tbl = sinktest.Verifying(tbl)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if n := load(b, tbl); n.Unchanged != total {
				b.Fatalf("unchanged %d, want %d", n.Unchanged, total)
			}
		}
		report(b)
	})
	b.Run("plain_copy", func(b *testing.B) {
		cols := []string{"id", "name", "amount", "active", "updated_at", "payload", contract.ColHash, contract.ColSyncedAt}
		data := make([][][]any, len(pages))
		now := time.Now()
		for p, page := range pages {
			for _, r := range page {
				amount := r.Values[2].(string)
				vals := append(append([]any{}, r.Values[:2]...), amount, r.Values[3], r.Values[4], r.Values[5], r.Hash, now)
				data[p] = append(data[p], vals)
			}
		}
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			name := fmt.Sprintf("copy_%d_%s", i, sinktest.RandomHex(3))
			tbl := newTable(name)
			if err := s.Prepare(ctx, tbl); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			for _, page := range data {
				tx, err := conn.Begin(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := tx.CopyFrom(ctx, pgx.Identifier{schema, name}, cols, pgx.CopyFromRows(page)); err != nil {
					b.Fatal(err)
				}
				if err := tx.Commit(ctx); err != nil {
					b.Fatal(err)
				}
			}
		}
		report(b)
	})
}
