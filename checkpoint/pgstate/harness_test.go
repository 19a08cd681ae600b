package pgstate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/idemsync/idemsync/checkpoint/storetest"
	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/internal/pgtest"
	"github.com/jackc/pgx/v5"
)

// testURL returns the database the tests use (pgtest.URL).
func testURL(t testing.TB) string {
	t.Helper()
	return pgtest.URL(t)
}

// newSchema returns the state URL of a new schema of its own, dropped
// when the test ends, with query parameters extra added.
func newSchema(t testing.TB, extra url.Values) string {
	t.Helper()
	base := testURL(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "st_" + hex.EncodeToString(b)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("schema", schema)
	for k, v := range extra {
		q[k] = v
	}
	u.RawQuery = q.Encode()
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), base)
		if err != nil {
			t.Logf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			t.Logf("drop schema %s: %v", schema, err)
		}
	})
	return u.String()
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func openTest(t *testing.T, state string) *Store {
	t.Helper()
	s, err := Open(context.Background(), state, testLogger(t))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

// TestConformance runs the suite every state store passes on a schema of
// its own per case.
func TestConformance(t *testing.T) {
	testURL(t)
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) func(t *testing.T) contract.Store {
			state := newSchema(t, url.Values{"lease": {"1s"}})
			return func(t *testing.T) contract.Store { return openTest(t, state) }
		},
		Lease: time.Second,
		Pause: func(s contract.Store) { s.(*Store).paused.Store(true) },
		BeforeCommit: func(s contract.Store, fn func()) {
			ps := s.(*Store)
			var once sync.Once
			ps.beforeCommit = func() { once.Do(fn) }
		},
	})
}
