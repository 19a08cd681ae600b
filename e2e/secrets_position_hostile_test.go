package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"path/filepath"
	gosync "sync"
	"testing"
)

// An API's cursor is its own text, whatever it holds: one that already
// reads like a stored marker ({$s:HEX}, of no secret or of the job's own
// key) goes back to the API as it gave it, byte for byte, not turned into
// the key nor refused as a secret the job no longer has; and a keyset API
// that ends by giving again the cursor (holding the key) it was asked
// with ends there, as it does for a cursor without a secret
// (docs/job-file.md, "What is and is not a secret").
func TestSecretsPositionHostileCursor(t *testing.T) {
	key := canary(t, "Hostile")
	sum := sha256.Sum256([]byte(key))
	for _, tc := range []struct{ name, cursor string }{
		{"marker of no secret", "{$s:0123456789abcdef}"},
		{"marker of the key", "c1-{$s:" + hex.EncodeToString(sum[:8]) + "}"},
		{"marker and the key", "{$s:" + hex.EncodeToString(sum[:8]) + "}|" + key},
		{"escaped marker text", "{$e}{$s:}{$"},
		{"inclusive end with the key", "c1-" + key},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				mu  gosync.Mutex
				bad []string
			)
			api := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				switch cursor := r.URL.Query().Get("cursor"); {
				case cursor == "":
					fmt.Fprintf(w, `{"data":[{"id":1}],"next":%q}`, tc.cursor)
				case cursor == tc.cursor && tc.name == "inclusive end with the key":
					// The last record, and the cursor it was asked with.
					fmt.Fprintf(w, `{"data":[{"id":2}],"next":%q}`, tc.cursor)
				case cursor == tc.cursor:
					fmt.Fprint(w, `{"data":[{"id":2}],"next":null}`)
				default:
					mu.Lock()
					bad = append(bad, cursor)
					mu.Unlock()
					w.WriteHeader(http.StatusBadRequest)
					fmt.Fprint(w, `{"error":"unknown cursor"}`)
				}
			}))
			dir := t.TempDir()
			writeJob(t, dir, "job.yaml", fmt.Sprintf(`name: hostile
source:
  url: %s/v1/items
  records: data
  headers: {X-Api-Key: "${KEY}"}
pagination: {style: cursor, next: next}
target: {url: "sqlite:out.db", table: items, key: [id]}
`, api))
			env := []string{"KEY=" + key}
			var rs []result
			for _, args := range [][]string{
				{"run", "job.yaml", "--max-pages", "1"},
				{"run", "job.yaml"},
			} {
				r := idemsync(t, dir, env, args...)
				if r.code != 0 {
					t.Fatalf("%v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
				}
				rs = append(rs, r)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(bad) > 0 {
				t.Fatalf("the API got a cursor it never gave: %q (it gave %q)", bad, tc.cursor)
			}
			if n := countRows(t, filepath.Join(dir, "out.db"), "items"); n != 2 {
				t.Fatalf("%d rows, want 2", n)
			}
			authScanAll(t, dir, &canaryScan{canaries: []string{key}}, rs...)
		})
	}
}

// A replay's --from and --to name cursors holding the job's key, typed as
// the API gave them or as status shows them (a marker in its place): the
// API gets the exact cursors, the replay stops at --to, and the state file
// keeps the replay's range without the key.
func TestSecretsPositionReplayRange(t *testing.T) {
	key := canary(t, "Replay")
	sum := sha256.Sum256([]byte(key))
	marker := "{$s:" + hex.EncodeToString(sum[:8]) + "}"
	var (
		mu   gosync.Mutex
		bad  []string
		asks []string
	)
	api := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		cursor := r.URL.Query().Get("cursor")
		mu.Lock()
		asks = append(asks, cursor)
		mu.Unlock()
		switch cursor {
		case "":
			fmt.Fprintf(w, `{"data":[{"id":1}],"next":%q}`, "c1-"+key)
		case "c1-" + key:
			fmt.Fprintf(w, `{"data":[{"id":2}],"next":%q}`, "c2-"+key)
		case "c2-" + key:
			fmt.Fprintf(w, `{"data":[{"id":3}],"next":%q}`, "c3-"+key)
		case "c3-" + key:
			fmt.Fprint(w, `{"data":[{"id":4}],"next":null}`)
		default:
			mu.Lock()
			bad = append(bad, cursor)
			mu.Unlock()
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"unknown cursor"}`)
		}
	}))
	for _, tc := range []struct{ name, from, to string }{
		{"as the API gave them", "c1-" + key, "c2-" + key},
		{"as status shows them", "c1-" + marker, "c2-" + marker},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeJob(t, dir, "job.yaml", fmt.Sprintf(`name: replay
source:
  url: %s/v1/items
  records: data
  headers: {X-Api-Key: "${KEY}"}
pagination: {style: cursor, next: next}
target: {url: "sqlite:out.db", table: items, key: [id]}
`, api))
			env := []string{"KEY=" + key}
			mu.Lock()
			asks = nil
			mu.Unlock()
			args := []string{"replay", "job.yaml", "--from", tc.from, "--to", tc.to}
			r := idemsync(t, dir, env, args...)
			if r.code != 0 {
				t.Fatalf("%v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(bad) > 0 {
				t.Fatalf("the API got a cursor it never gave: %q", bad)
			}
			if want := []string{"c1-" + key, "c2-" + key}; fmt.Sprint(asks) != fmt.Sprint(want) {
				t.Fatalf("the replay asked for %q, want %q", asks, want)
			}
			authScanAll(t, dir, &canaryScan{canaries: []string{key}}, r)
		})
	}
}
