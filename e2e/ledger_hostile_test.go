package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// A holder's heartbeat, complete or fail races another worker's claim just
// after the holder's lease ran out, on SQLite and PostgreSQL (the real
// binary, one process each, started at once): exactly one of them wins,
// never both — a heartbeat that renewed (ok) leaves the claim
// in_progress, a claim that acquired leaves the holder stale_token, and a
// complete that recorded leaves the claim completed. Two "yours" answers
// would be the side effect done twice with no expired_unknown to show
// it (docs/ledger.md, "What each crash leaves").
func TestLedgerOutcomeRacesReclaim(t *testing.T) {
	dir := t.TempDir()
	for name, state := range ledgerStates(t, dir) {
		t.Run(name, func(t *testing.T) {
			wins := map[string]int{}
			for i := range 6 {
				op := []string{"heartbeat", "complete", "fail"}[i%3]
				k := fmt.Sprintf("race-%s-%d", op, i)
				h, _ := key(t, dir, state, "claim", k, "--ttl", "300ms", "--owner", "w1")
				wantKey(t, "holder's claim", h, "acquired")
				time.Sleep(time.Duration(300+40*i) * time.Millisecond)
				args := []string{op, k, "--token", h.Token}
				if op == "fail" {
					args = append(args, "--permanent")
				}
				var holder, other keyJSON
				var wg gosync.WaitGroup
				wg.Add(2)
				go func() { defer wg.Done(); holder, _ = keyNoFatal(t, dir, state, args...) }()
				go func() { defer wg.Done(); other, _ = keyNoFatal(t, dir, state, "claim", k, "--owner", "w2") }()
				wg.Wait()
				holderWon := holder.Status == "ok" || holder.Status == "completed" || holder.Status == "failed"
				switch {
				case holderWon && other.Status == "acquired":
					t.Errorf("%s: the holder's %s answered %s and the other's claim acquired (%+v): both act", k, op, holder.Status, other)
				case !holderWon && holder.Status != "stale_token":
					t.Errorf("%s: the holder's %s answered %+v", k, op, holder)
				case !holderWon && (other.Status != "acquired" || other.Previous != "expired_unknown"):
					t.Errorf("%s: the holder's %s was stale, the claim answered %+v: want acquired, expired_unknown", k, op, other)
				case holderWon && op == "heartbeat" && other.Status != "in_progress",
					holderWon && op == "complete" && other.Status != "completed",
					holderWon && op == "fail" && other.Status != "failed":
					t.Errorf("%s: the holder's %s won (%s), the claim answered %+v", k, op, holder.Status, other)
				}
				if holderWon {
					wins["holder"]++
				} else {
					wins["claimer"]++
				}
			}
			t.Logf("wins: %v", wins)
		})
	}
}

// keyNoFatal is key for a goroutine: a call whose stdout is not one JSON
// object is an error of the test, not a Fatal from the wrong goroutine.
func keyNoFatal(t *testing.T, dir, state string, args ...string) (keyJSON, result) {
	var k keyJSON
	r := idemsync(t, dir, []string{"IDEMSYNC_STATE=" + state}, append([]string{"key"}, args...)...)
	if err := json.Unmarshal([]byte(r.stdout), &k); err != nil {
		t.Errorf("key %v: %v\nstdout: %s\nstderr: %s", args, err, r.stdout, r.stderr)
	}
	return k, r
}

// `key gc` given a retention that means "forever" to a careless reader
// deletes nothing: --keep 0 (which reads as "no limit" in many tools) and
// a number of days past what a duration holds (213504d wrapped round to
// 25 minutes) are refused, exit 2, and a completed key still replays its
// result. Deleted, the next delivery of its unit would act again
// (docs/ledger.md, "Retention").
func TestLedgerGCKeepForever(t *testing.T) {
	dir := t.TempDir()
	for name, state := range ledgerStates(t, dir) {
		t.Run(name, func(t *testing.T) {
			a, _ := key(t, dir, state, "claim", "inv-9")
			key(t, dir, state, "complete", "inv-9", "--token", a.Token, "--result", `{"sent":true}`)
			time.Sleep(50 * time.Millisecond)
			for _, keep := range []string{"0", "0s", "0d", "213504d", "106752d"} {
				r := idemsync(t, dir, []string{"IDEMSYNC_STATE=" + state}, "key", "gc", "--keep", keep)
				if r.code != 2 {
					t.Errorf("key gc --keep %s: exit %d, want 2\n%s%s", keep, r.code, r.stdout, r.stderr)
				}
			}
			if c, _ := key(t, dir, state, "claim", "inv-9"); c.Status != "completed" || string(c.Result) != `{"sent":true}` {
				t.Fatalf("the completed key after the refused gcs: %+v, want its replay", c)
			}
		})
	}
}

// Two different keys never read as one, and one key never as two, on
// SQLite and PostgreSQL (the real binary): a claim --batch line whose
// strings are not UTF-8 (Latin-1 "Müller" and "Mäller") or hold a lone
// UTF-16 surrogate escape is refused with its line, where JSON decoding
// would have turned both into U+FFFD and the second unit would have been
// told the first one's outcome; so are --params that would fingerprint
// alike, and a --result that is not UTF-8 (PostgreSQL refused it as a
// store failure, SQLite replayed bytes that are not JSON). Keys are bytes:
// case and Unicode normalisation twins, and one key in two namespaces,
// are separate units (docs/ledger.md, "Choosing a key").
func TestLedgerKeyBytes(t *testing.T) {
	dir := t.TempDir()
	for name, state := range ledgerStates(t, dir) {
		t.Run(name, func(t *testing.T) {
			in := strings.Join([]string{
				"{\"key\":\"contact:M\xfcller:create\"}",
				"{\"key\":\"contact:M\xe4ller:create\"}",
				`{"key":"a\ud800"}`,
				`{"key":"a\udbff"}`,
				`{"key":"o","owner":"run\udc00"}`,
				`{"key":"p","params":{"to":"x\ud800"}}`,
				`{"key":"caf\u00e9"}`,
				`{"key":"cafe\u0301"}`,
				`{"key":"Cafe"}`,
				`{"key":"cafe"}`,
				`{"key":"k","ns":"a"}`,
				`{"key":"k","ns":"b"}`,
			}, "\n") + "\n"
			r := idemsyncStdin(t, dir, []string{"IDEMSYNC_STATE=" + state}, in, "key", "claim", "--batch")
			if r.code != 0 {
				t.Fatalf("batch: exit %d: %s", r.code, r.stderr)
			}
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			if len(lines) != 12 {
				t.Fatalf("batch: %d result lines for 12: %s", len(lines), r.stdout)
			}
			downstream := map[string]int{}
			for i, line := range lines {
				var k keyJSON
				if err := json.Unmarshal([]byte(line), &k); err != nil {
					t.Fatalf("line %d: %v: %q", i+1, err, line)
				}
				switch {
				case i < 6 && (k.Status != "invalid" || !strings.Contains(k.Message, "UTF")):
					t.Errorf("line %d: %s, want invalid naming UTF-8 or UTF-16", i+1, line)
				case i >= 6 && k.Status != "acquired":
					t.Errorf("line %d: %s, want acquired (a unit of its own)", i+1, line)
				case i >= 6:
					if j, seen := downstream[k.DownstreamKey]; seen {
						t.Errorf("lines %d and %d share downstream key %s", j+1, i+1, k.DownstreamKey)
					}
					downstream[k.DownstreamKey] = i
				}
			}
			for _, k := range []string{"contact:M\ufffdller:create", "a\ufffd", "o", "p"} {
				if g, _ := key(t, dir, state, "get", k); g.Status != "not_found" {
					t.Errorf("get %q after the refused lines: %+v, want not_found", k, g)
				}
			}
			// Two objects on one line (a producer that forgot the newline):
			// refused, not the first claimed and the second dropped unseen.
			// So is an empty ns (an unset variable), which read as the
			// default namespace, one unit with the default's key; and an
			// empty on_expired or ttl, which overrode the flags' hold and
			// lease with retry and 10m.
			r = idemsyncStdin(t, dir, []string{"IDEMSYNC_STATE=" + state}, `{"key":"x1"}{"key":"x2"}`+"\n"+`{"key":"x1","ns":""}`+"\n"+
				`{"key":"x1","on_expired":""}`+"\n"+`{"key":"x1","ttl":""}`+"\n", "key", "claim", "--batch", "--on-expired", "hold", "--ttl", "2h")
			if n := strings.Count(strings.TrimSpace(r.stdout), "\n") + 1; n != 4 {
				t.Errorf("batch of 4 lines: %d result lines\n%s", n, r.stdout)
			}
			for i, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
				var k keyJSON
				if json.Unmarshal([]byte(line), &k) != nil || k.Status != "invalid" {
					t.Errorf("line %d: %s, want invalid", i+1, line)
				}
			}
			// An owner with a NUL (PostgreSQL's text cannot hold it) is
			// its line's error, not the whole batch's store failure.
			r = idemsyncStdin(t, dir, []string{"IDEMSYNC_STATE=" + state}, `{"key":"y1","owner":"a\u0000b"}`+"\n"+`{"key":"y2"}`+"\n", "key", "claim", "--batch")
			if ls := strings.Split(strings.TrimSpace(r.stdout), "\n"); r.code != 0 || len(ls) != 2 ||
				!strings.Contains(ls[0], `"invalid"`) || !strings.Contains(ls[1], `"acquired"`) {
				t.Errorf("a batch with an owner holding NUL: exit %d\n%s%s; want line 1 invalid, line 2 acquired", r.code, r.stdout, r.stderr)
			}
			if g, _ := key(t, dir, state, "get", "x1"); g.Status != "not_found" {
				t.Errorf("get x1 after its refused line: %+v, want not_found", g)
			}
			if _, r := key(t, dir, state, "claim", "p", "--params", `{"to":"x\ud800"}`); r.code != 2 {
				t.Errorf("claim --params with a lone surrogate: exit %d, want 2: %s", r.code, r.stdout)
			}
			c, _ := key(t, dir, state, "claim", "r")
			if g, r := key(t, dir, state, "complete", "r", "--token", c.Token, "--result", "\"\xff\""); r.code != 2 || !strings.Contains(r.stdout, "UTF-8") {
				t.Errorf("complete --result not UTF-8: exit %d, %+v; want exit 2 naming UTF-8", r.code, g)
			}
			if g, _ := key(t, dir, state, "complete", "r", "--token", c.Token, "--result", `"\u00ff"`); g.Status != "completed" {
				t.Errorf("complete after the refused one: %+v", g)
			}
		})
	}
}

// A state file whose key index is damaged (the cell offsets of its page
// point past the page, as a torn or overwritten page does) fails closed,
// exit 1: before, SQLite followed the offsets without complaint, found no
// entry for a key whose lease was live, and a second claimer acquired it
// (and the file then held the key twice). SQLite checks each cell's
// bounds as it reads it (cell_size_check), so the damage is an error
// (docs/ledger.md, "Exit codes").
func TestLedgerDamagedKeyIndex(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "ledger.db")
	for _, k := range []string{"k1", "k2", "k3"} {
		c, _ := key(t, dir, state, "claim", k, "--ttl", "10m")
		wantKey(t, "claim "+k, c, "acquired")
	}
	db, err := sql.Open("sqlite", state)
	if err != nil {
		t.Fatal(err)
	}
	var root, pageSize int64
	err = db.QueryRow(`SELECT rootpage FROM sqlite_master WHERE name = 'sqlite_autoindex_ledger_1'`).Scan(&root)
	if err == nil {
		err = db.QueryRow(`PRAGMA page_size`).Scan(&pageSize)
	}
	if err == nil {
		_, err = db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
	}
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(state, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	page := make([]byte, pageSize)
	if _, err := f.ReadAt(page, (root-1)*pageSize); err != nil {
		t.Fatal(err)
	}
	if page[0] != 0x0a { // a leaf index page: its cell offsets follow its 8-byte header
		t.Fatalf("index root page type %#x, want a leaf (0x0a)", page[0])
	}
	for i := range int(page[3])<<8 | int(page[4]) {
		page[8+2*i], page[9+2*i] = 0xff, 0x00 // offset 65280, past the page
	}
	if _, err := f.WriteAt(page, (root-1)*pageSize); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, k := range []string{"k1", "k4"} {
		c, r := key(t, dir, state, "claim", k)
		if c.Status == "acquired" || r.code != 1 {
			t.Errorf("claim %s on the damaged file: exit %d, %+v; want exit 1, nothing acquired", k, r.code, c)
		}
	}
}

// On PostgreSQL, a key whose row another transaction keeps locked — a
// holder's complete paused mid-transaction, or its host partitioned
// from the server, which keeps the transaction open until TCP gives up
// (hours) — makes a claim, complete, fail or heartbeat of that key wait
// at most the lock timeout (10 s, the SQLite state's busy timeout) and
// fail closed, exit 3 and nothing claimed: before, each call waited for
// as long as the lock was held, and an n8n node with it
// (docs/ledger.md, "Atomic claims"). The test binary's wait is shortened
// to 1 s (IDEMSYNC_TEST_LOCK_WAIT): what is checked is that it ends.
func TestLedgerPostgresRowLocked(t *testing.T) {
	pg := os.Getenv("IDEMSYNC_TEST_POSTGRES_URL")
	if pg == "" {
		t.Skip("IDEMSYNC_TEST_POSTGRES_URL is not set")
	}
	dir := t.TempDir()
	schema := freshSchema(t, pg)
	state := pgStateURL(t, pg, schema, "30s")
	c, _ := key(t, dir, state, "claim", "locked", "--ttl", "1s")
	wantKey(t, "the first claim", c, "acquired")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // ends the lock
	if _, err := tx.Exec(ctx, "SELECT 1 FROM "+pgx.Identifier{schema, "ledger"}.Sanitize()+" WHERE key = 'locked' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // the first lease ends: only the lock stands
	for _, args := range [][]string{{"claim", "locked"}, {"complete", "locked", "--token", c.Token}} {
		cctx, cancel := context.WithTimeout(ctx, 40*time.Second)
		cmd := exec.CommandContext(cctx, binary, append([]string{"key"}, args...)...)
		cmd.Dir, cmd.Env = dir, append(cleanEnv(), "IDEMSYNC_STATE="+state, "IDEMSYNC_TEST_LOCK_WAIT=1s")
		start := time.Now()
		out, _ := cmd.Output()
		cancel()
		took := time.Since(start)
		var k keyJSON
		_ = json.Unmarshal(out, &k)
		if cmd.ProcessState.ExitCode() != 3 || k.Status != "error" || took > 30*time.Second {
			t.Errorf("key %v with the row locked: exit %d after %s, %s; want exit 3 after about 1s (IDEMSYNC_TEST_LOCK_WAIT)",
				args, cmd.ProcessState.ExitCode(), took.Round(time.Second), out)
		}
	}
	_ = tx.Rollback(ctx)
	if g, _ := key(t, dir, state, "claim", "locked"); g.Status != "acquired" || g.Previous != "expired_unknown" {
		t.Errorf("claim after the lock ended: %+v, want acquired, expired_unknown", g)
	}
}

// A key twice in one claim --batch with an --owner (n8n's execution id,
// as docs/ledger.md advises; a webhook batch that holds an event and its
// redelivery): the first line acquires, the repeat is in_progress, on
// SQLite and PostgreSQL. Before, the repeat got the first line's claim
// back (acquired, previous reclaimed, the same token), and a workflow
// acting on every acquired line did the unit twice: a repeat within one
// call is another delivery, never the same claimer retrying.
func TestLedgerBatchRepeatedKey(t *testing.T) {
	dir := t.TempDir()
	for name, state := range ledgerStates(t, dir) {
		t.Run(name, func(t *testing.T) {
			in := `{"key":"inv-1:send"}` + "\n" + `{"key":"inv-2:send","owner":"o"}` + "\n" +
				`{"key":"inv-1:send"}` + "\n" + `{"key":"inv-2:send","owner":"o"}` + "\n"
			r := idemsyncStdin(t, dir, []string{"IDEMSYNC_STATE=" + state}, in, "key", "claim", "--batch", "--owner", "exec-42")
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			if r.code != 0 || len(lines) != 4 {
				t.Fatalf("batch: exit %d, %d lines: %s%s", r.code, len(lines), r.stdout, r.stderr)
			}
			for i, want := range []string{"acquired", "acquired", "in_progress", "in_progress"} {
				var k keyJSON
				if err := json.Unmarshal([]byte(lines[i]), &k); err != nil || k.Status != want {
					t.Errorf("line %d: %s, want %s", i+1, lines[i], want)
				}
			}
			// A later call by the same owner is its retry: its claim back.
			if c, _ := key(t, dir, state, "claim", "inv-1:send", "--owner", "exec-42"); c.Status != "acquired" || c.Previous != "reclaimed" {
				t.Errorf("the owner's next call: %+v, want acquired, reclaimed", c)
			}
		})
	}
}
