package pgstate

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Two processes open one new state schema at once: the second may read
// "no version table" just before the first commits its migration, and
// then, in its own transaction, count the first's committed tables. It
// refused the schema as another application's ("has 15 tables and no
// idemsync_schema"), exit 1 — seen by TestModel seed 103 with
// IDEMSYNC_TEST_STATE=postgres, two runs started at once on a fresh
// state. The check is made of what one statement sees: a schema whose
// version table is there is ours, whatever an earlier read said.
func TestCheckEmptyAfterARacingMigration(t *testing.T) {
	ctx := context.Background()
	state := newSchema(t, nil)
	first, err := Open(ctx, state, testLogger(t)) // the racing creator, committed
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	err = first.inTx(ctx, func(tx pgx.Tx) error { return first.checkEmpty(ctx, tx) })
	if err != nil {
		t.Fatalf("the emptiness check of a schema another opener just migrated: %v; want it taken as ours", err)
	}
}
