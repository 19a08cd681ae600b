package feed_test

import (
	"context"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/feed"
	"github.com/idemsync/idemsync/ledger"
	"github.com/idemsync/idemsync/sink/sinktest"
)

// Every event's suggested ledger key can be claimed (idemsync key claim
// refuses a key over 255 bytes, with a NUL or not UTF-8), names one
// version of one row, and is the same on SQLite and PostgreSQL; a key
// that fits is the plain resource:key:tag form it always was
// (docs/changes.md, Events).
func TestSuggestedLedgerKeysClaimable(t *testing.T) {
	long := strings.Repeat("k", 300)
	type rec struct{ id, ver string }
	recs := []rec{
		{"short", "1"},                       // plain, unchanged
		{long, "1"},                          // long key
		{long + "x", "1"},                    // another long key: another ledger key
		{"short2", strings.Repeat("9", 300)}, // long version
		{"1:v2", "3"},                        // plain texts that would be one:
		{"1", "2:v3"},                        // items:1:v2:v3
	}
	byCase := map[string]map[string]string{} // database -> key/version -> ledger key
	eachTarget(t, func(t *testing.T, tg *target) {
		ctx := context.Background()
		tg.tbl.Columns = []contract.Column{{Name: "id", Type: contract.TypeText}, {Name: "ver", Type: contract.TypeText}}
		tg.tbl.Version = "ver"
		s, fd := tg.fed(t)
		all := recs
		if tg.name == "sqlite" { // PostgreSQL's text holds neither
			all = append(all, rec{"nu\x00l", "1"}, rec{"bad\xffutf8", "1"}, rec{"v", "a\x00b"})
		}
		var rows []contract.Row
		for _, r := range all {
			rows = append(rows, sinktest.Row(r.id, r.ver))
		}
		if _, err := s.Upsert(ctx, tg.tbl, rows); err != nil {
			t.Fatalf("upsert: %v", err)
		}
		b, err := feed.Next(ctx, fd, tg.job, feed.Options{Consumer: "c"})
		if err != nil || len(b.Events) != len(all) {
			t.Fatalf("batch %+v, %v; want %d events", b, err, len(all))
		}
		seen := map[string]string{}
		got := map[string]string{}
		for _, e := range b.Events {
			if _, err := (ledger.Claim{Key: e.LedgerKey}).Request(); err != nil {
				t.Errorf("event key %q version %q: ledger key %q cannot be claimed: %v", trim(e.Key), trim(e.Version), trim(e.LedgerKey), err)
			}
			if k, dup := seen[e.LedgerKey]; dup {
				t.Errorf("events of keys %q and %q share the ledger key %q", trim(k), trim(e.Key), e.LedgerKey)
			}
			seen[e.LedgerKey] = e.Key
			got[e.Key+"\x00"+e.Version] = e.LedgerKey
		}
		if k := got["short\x001"]; k != "items:short:v1" {
			t.Errorf("short key's ledger key %q, want items:short:v1 as before", k)
		}
		byCase[tg.name] = got
	})
	if pg := byCase["postgres"]; pg != nil {
		for k, v := range pg {
			if byCase["sqlite"][k] != v {
				t.Errorf("row %q: ledger key %q on PostgreSQL, %q on SQLite", trim(k), trim(v), trim(byCase["sqlite"][k]))
			}
		}
	}
}

func trim(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// The digest form of an insert, an update and a deletion of one long key
// are three keys, each claimable, and a resource too long for even that
// form still gets one.
func TestLedgerKeyDigestForms(t *testing.T) {
	long := strings.Repeat("é", 200)
	hash := strings.Repeat("ab", 32)
	keys := map[string]bool{}
	for _, e := range []feed.Event{
		{Resource: "items", Key: long, Op: "I", Hash: hash},
		{Resource: "items", Key: long, Op: "U", Hash: strings.Repeat("cd", 32)},
		{Resource: "items", Key: long, Op: "D", Hash: hash},
		{Resource: strings.Repeat("r", 250), Key: "1", Op: "I", Hash: hash},
		{Resource: strings.Repeat("r", 251), Key: "1", Op: "I", Hash: hash},
	} {
		k := feed.LedgerKey(e)
		if _, err := (ledger.Claim{Key: k}).Request(); err != nil {
			t.Errorf("%s %s: ledger key %q: %v", e.Op, trim(e.Key), trim(k), err)
		}
		if keys[k] {
			t.Errorf("%s %s: ledger key %q again", e.Op, trim(e.Key), k)
		}
		keys[k] = true
	}
	if k := feed.LedgerKey(feed.Event{Resource: "items", Key: "7", Op: "D", Hash: hash}); k != "items:7:d"+hash[:16] {
		t.Errorf("short deletion's key %q, want items:7:d%s as before", k, hash[:16])
	}
}
