package sinktest

import (
	"context"
	"errors"
	"strings"
	"testing"

	idsync "github.com/idemsync/idemsync/sync"
)

// ownerCases check the registration of a table's writers (idsync.TableOwners,
// docs/deletions.md "One writer per swept table"): a sweeping writer is
// alone, keep writers share, every sink of the database sees them.
func ownerCases() []testCase {
	a := idsync.Writer{Job: "shop.orders", State: "/srv/a/state.db", Deletes: idsync.DeletesHard}
	b := idsync.Writer{Job: "shop.refunds", State: "/srv/a/state.db", Deletes: idsync.DeletesHard}
	sameNameOtherFile := idsync.Writer{Job: "shop.orders", State: "/srv/b/state.db", Deletes: idsync.DeletesKeep}
	keep1 := idsync.Writer{Job: "k1", State: "/srv/a/state.db"}
	keep2 := idsync.Writer{Job: "k2", State: "/srv/b/state.db", Deletes: idsync.DeletesKeep}
	return []testCase{
		{"owners: a sweeping writer is alone", func(t *testing.T, b0 *DB) {
			tbl := People(b0)
			s1, s2 := owners(t, b0), owners(t, b0) // two processes
			mustClaim(t, s1, tbl, idsync.TableClaim{Writer: a})
			mustClaim(t, s1, tbl, idsync.TableClaim{Writer: a}) // again: the same writer
			refused(t, s2, tbl, idsync.TableClaim{Writer: b}, "shop.orders")
			refused(t, s2, tbl, idsync.TableClaim{Writer: sameNameOtherFile}, "/srv/a/state.db")
			refused(t, s2, tbl, idsync.TableClaim{Writer: b, Check: true}, "shop.orders")
			// Another table of the database is free.
			mustClaim(t, s2, b0.Table("other", []string{"id"}, Col("id", idsync.TypeText)), idsync.TableClaim{Writer: b})
		}},
		{"owners: keep writers share, a sweeper is refused among them", func(t *testing.T, b0 *DB) {
			tbl := People(b0)
			s1, s2 := owners(t, b0), owners(t, b0)
			mustClaim(t, s1, tbl, idsync.TableClaim{Writer: keep1})
			mustClaim(t, s2, tbl, idsync.TableClaim{Writer: keep2})
			refused(t, s2, tbl, idsync.TableClaim{Writer: a}, "k1")
			// A keep writer that turns deletes on is refused too.
			soft := keep2
			soft.Deletes = idsync.DeletesSoft
			refused(t, s2, tbl, idsync.TableClaim{Writer: soft}, "k1")
		}},
		{"owners: check registers nothing and creates nothing", func(t *testing.T, b0 *DB) {
			tbl := People(b0)
			s := owners(t, b0)
			mustClaim(t, s, tbl, idsync.TableClaim{Writer: a, Check: true})
			mustClaim(t, s, tbl, idsync.TableClaim{Writer: b, Check: true}) // a was not registered
			mustClaim(t, s, tbl, idsync.TableClaim{Writer: b})
			refused(t, s, tbl, idsync.TableClaim{Writer: a}, "shop.refunds")
		}},
		{"owners: take over releases the others", func(t *testing.T, b0 *DB) {
			tbl := People(b0)
			s1, s2 := owners(t, b0), owners(t, b0)
			mustClaim(t, s1, tbl, idsync.TableClaim{Writer: a})
			mustClaim(t, s2, tbl, idsync.TableClaim{Writer: b, TakeOver: true})
			mustClaim(t, s2, tbl, idsync.TableClaim{Writer: b})
			refused(t, s1, tbl, idsync.TableClaim{Writer: a}, "shop.refunds")
			// The owner turning deletes off lets keep writers in.
			off := b
			off.Deletes = idsync.DeletesKeep
			mustClaim(t, s2, tbl, idsync.TableClaim{Writer: off})
			mustClaim(t, s1, tbl, idsync.TableClaim{Writer: keep1})
		}},
	}
}

// owners opens a sink that must implement idsync.TableOwners.
func owners(t *testing.T, b *DB) idsync.TableOwners {
	t.Helper()
	o, ok := b.Sink(t).(idsync.TableOwners)
	if !ok {
		t.Fatalf("%s: the sink does not implement idsync.TableOwners", b.Name)
	}
	return o
}

func mustClaim(t *testing.T, o idsync.TableOwners, tbl *idsync.Table, c idsync.TableClaim) {
	t.Helper()
	if err := o.ClaimTable(context.Background(), tbl, c); err != nil {
		t.Fatalf("claim %s for %s (check %v, take over %v): %v", tbl, c.Writer, c.Check, c.TakeOver, err)
	}
}

// refused fails unless the claim is refused with exit 2, naming owner.
func refused(t *testing.T, o idsync.TableOwners, tbl *idsync.Table, c idsync.TableClaim, owner string) {
	t.Helper()
	err := o.ClaimTable(context.Background(), tbl, c)
	if !errors.Is(err, idsync.ErrSharedTable) || idsync.ExitCode(err) != idsync.ExitUsage || !strings.Contains(err.Error(), owner) {
		t.Fatalf("claim %s for %s: got %v (exit %d), want a refusal (exit 2) naming %s", tbl, c.Writer, err, idsync.ExitCode(err), owner)
	}
}
