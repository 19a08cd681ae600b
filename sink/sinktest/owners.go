package sinktest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
)

// ownerCases check the registration of a table's writers (contract.TableOwners,
// docs/deletions.md "One writer per swept table"): a sweeping writer is
// alone, keep writers share, every sink of the database sees them.
func ownerCases() []testCase {
	a := contract.Writer{Job: "shop.orders", State: "/srv/a/state.db", Deletes: contract.DeletesHard}
	b := contract.Writer{Job: "shop.refunds", State: "/srv/a/state.db", Deletes: contract.DeletesHard}
	sameNameOtherFile := contract.Writer{Job: "shop.orders", State: "/srv/b/state.db", Deletes: contract.DeletesKeep}
	keep1 := contract.Writer{Job: "k1", State: "/srv/a/state.db"}
	keep2 := contract.Writer{Job: "k2", State: "/srv/b/state.db", Deletes: contract.DeletesKeep}
	return []testCase{
		{"owners: a sweeping writer is alone", func(t *testing.T, b0 *DB) {
			tbl := People(b0)
			s1, s2 := owners(t, b0), owners(t, b0) // two processes
			mustClaim(t, s1, tbl, contract.TableClaim{Writer: a})
			mustClaim(t, s1, tbl, contract.TableClaim{Writer: a}) // again: the same writer
			refused(t, s2, tbl, contract.TableClaim{Writer: b}, "shop.orders")
			refused(t, s2, tbl, contract.TableClaim{Writer: sameNameOtherFile}, "/srv/a/state.db")
			refused(t, s2, tbl, contract.TableClaim{Writer: b, Check: true}, "shop.orders")
			// Another table of the database is free.
			mustClaim(t, s2, b0.Table("other", []string{"id"}, Col("id", contract.TypeText)), contract.TableClaim{Writer: b})
		}},
		{"owners: keep writers share, a sweeper is refused among them", func(t *testing.T, b0 *DB) {
			tbl := People(b0)
			s1, s2 := owners(t, b0), owners(t, b0)
			mustClaim(t, s1, tbl, contract.TableClaim{Writer: keep1})
			mustClaim(t, s2, tbl, contract.TableClaim{Writer: keep2})
			refused(t, s2, tbl, contract.TableClaim{Writer: a}, "k1")
			// A keep writer that turns deletes on is refused too.
			soft := keep2
			soft.Deletes = contract.DeletesSoft
			refused(t, s2, tbl, contract.TableClaim{Writer: soft}, "k1")
		}},
		{"owners: check registers nothing and creates nothing", func(t *testing.T, b0 *DB) {
			tbl := People(b0)
			s := owners(t, b0)
			mustClaim(t, s, tbl, contract.TableClaim{Writer: a, Check: true})
			mustClaim(t, s, tbl, contract.TableClaim{Writer: b, Check: true}) // a was not registered
			mustClaim(t, s, tbl, contract.TableClaim{Writer: b})
			refused(t, s, tbl, contract.TableClaim{Writer: a}, "shop.refunds")
		}},
		{"owners: a child table's writer is alone, with keep writers too", func(t *testing.T, b0 *DB) {
			tbl := People(b0)
			s1, s2 := owners(t, b0), owners(t, b0)
			child := contract.Writer{Job: "shop.orders", State: "/srv/a/state.db", Deletes: contract.ChildRows}
			mustClaim(t, s1, tbl, contract.TableClaim{Writer: child})
			refused(t, s2, tbl, contract.TableClaim{Writer: keep2}, "child rows of job shop.orders")
			refused(t, s2, tbl, contract.TableClaim{Writer: keep2, Check: true}, "child rows of job shop.orders")
			// A keep writer first: the child table's writer is refused.
			other := b0.Table("other", []string{"id"}, Col("id", contract.TypeText))
			mustClaim(t, s2, other, contract.TableClaim{Writer: keep2})
			refused(t, s1, other, contract.TableClaim{Writer: child}, "writes it as a child table")
		}},
		{"owners: take over releases the others", func(t *testing.T, b0 *DB) {
			tbl := People(b0)
			s1, s2 := owners(t, b0), owners(t, b0)
			mustClaim(t, s1, tbl, contract.TableClaim{Writer: a})
			mustClaim(t, s2, tbl, contract.TableClaim{Writer: b, TakeOver: true})
			mustClaim(t, s2, tbl, contract.TableClaim{Writer: b})
			refused(t, s1, tbl, contract.TableClaim{Writer: a}, "shop.refunds")
			// The owner turning deletes off lets keep writers in.
			off := b
			off.Deletes = contract.DeletesKeep
			mustClaim(t, s2, tbl, contract.TableClaim{Writer: off})
			mustClaim(t, s1, tbl, contract.TableClaim{Writer: keep1})
		}},
	}
}

// owners opens a sink, as a process registering a writer does.
func owners(t *testing.T, b *DB) contract.TableOwners {
	t.Helper()
	return b.Sink(t)
}

func mustClaim(t *testing.T, o contract.TableOwners, tbl *contract.Table, c contract.TableClaim) {
	t.Helper()
	if err := o.ClaimTable(context.Background(), tbl, c); err != nil {
		t.Fatalf("claim %s for %s (check %v, take over %v): %v", tbl, c.Writer, c.Check, c.TakeOver, err)
	}
}

// refused fails unless the claim is refused with exit 2, naming owner.
func refused(t *testing.T, o contract.TableOwners, tbl *contract.Table, c contract.TableClaim, owner string) {
	t.Helper()
	err := o.ClaimTable(context.Background(), tbl, c)
	if !errors.Is(err, contract.ErrSharedTable) || contract.ClassOf(err) != contract.Invalid || !strings.Contains(err.Error(), owner) {
		t.Fatalf("claim %s for %s: got %v (exit %d), want a refusal (exit 2) naming %s", tbl, c.Writer, err, contract.ClassOf(err), owner)
	}
}
