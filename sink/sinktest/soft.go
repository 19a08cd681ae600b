package sinktest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

// softCases check deletes: soft: a key that comes back clears its row's
// mark, whatever the version guard decides about its content
// (docs/deletions.md, "target.deletes").
func softCases() []testCase {
	return []testCase{
		{"soft mark cleared by an older or null version", func(t *testing.T, b *DB) { softVersionUnmark(t, b, false) }},
		{"soft mark cleared by an older or null version with verify", func(t *testing.T, b *DB) { softVersionUnmark(t, b, true) }},
	}
}

// softVersionUnmark marks rows (tombstones on a soft table), then writes
// their keys again with an older, a NULL and an equal version: every mark
// is cleared (counted updated), the content stays what the version guard
// allows, and a second write of the same page is unchanged; verify sets
// Verify (run --verify).
func softVersionUnmark(t *testing.T, b *DB, verify bool) {
	s := b.Sink(t)
	tbl := b.Table("soft_versioned", []string{"id"},
		Col("id", contract.TypeInteger), Col("name", contract.TypeText), Col("rev", contract.TypeInteger))
	tbl.Version, tbl.Deletes, tbl.Verify = "rev", contract.DeletesSoft, verify
	MustPrepare(t, s, tbl)
	stored := []contract.Row{Row(int64(1), "r10", int64(10)), Row(int64(2), "r5", int64(5)), Row(int64(3), "r7", int64(7))}
	MustUpsert(t, s, tbl, contract.Counts{Inserted: 3}, stored...)
	var tombs []contract.Row
	for _, r := range stored {
		r.Tombstone = true
		tombs = append(tombs, r)
	}
	MustUpsert(t, s, tbl, contract.Counts{Deleted: 3}, tombs...)
	if got := markedIDs(t, b, tbl); got != "1,2,3" {
		t.Fatalf("marked after tombstones: %q, want 1,2,3", got)
	}
	back := []contract.Row{Row(int64(1), "older", int64(9)), Row(int64(2), "null version", nil), stored[2]}
	MustUpsert(t, s, tbl, contract.Counts{Updated: 3}, back...)
	if got := markedIDs(t, b, tbl); got != "" {
		t.Errorf("marked after the keys came back: %q, want none", got)
	}
	// The version guard still keeps the newer stored content.
	AssertRows(t, b.Read(t, tbl), Want(t, tbl, stored...))
	MustUpsert(t, s, tbl, contract.Counts{Unchanged: 3}, back...)
	// A newer version is written as before.
	newer := Row(int64(1), "r11", int64(11))
	MustUpsert(t, s, tbl, contract.Counts{Updated: 1}, newer)
	AssertRows(t, b.Read(t, tbl), Want(t, tbl, newer, stored[1], stored[2]))
	if got := markedIDs(t, b, tbl); got != "" {
		t.Errorf("marked at the end: %q, want none", got)
	}
}

// markedIDs returns the integer ids of tbl's rows marked deleted, in key
// order, joined by commas.
func markedIDs(t *testing.T, b *DB, tbl *contract.Table) string {
	t.Helper()
	var ids []string
	q := fmt.Sprintf("SELECT %s FROM %s WHERE %s IS NOT NULL ORDER BY 1", sqlkit.QuoteIdent(tbl.Key[0]), QName(tbl), sqlkit.QuoteIdent(contract.ColDeletedAt))
	for _, r := range b.Rows(t, q) {
		ids = append(ids, canon(t, contract.TypeInteger, r[0]))
	}
	return strings.Join(ids, ",")
}
