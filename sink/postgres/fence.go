package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
	"github.com/jackc/pgx/v5"
)

var _ contract.TxSink = (*Sink)(nil)

// fencesName is the table of fencing tokens in a target schema
// (docs/guarantees.md, "Fenced targets"): per state and job, the highest
// lease token that wrote a page there.
const fencesName = "_idemsync_fences"

// pageTx is an open page transaction as contract.PageTx.
type pageTx struct {
	p      *Sink
	tx     pgx.Tx
	schema string // the page's table's schema ("" : the current one)
	// created is the fences table this transaction made sure of: known to
	// exist once it commits.
	created string
}

func (x *pageTx) Tx() any { return x.tx }

// Fence records token as key's highest in the fences table of the page's
// schema, in the page's transaction, and refuses when a higher one is
// there: the row stays locked until the page commits, so a holder whose
// token another superseded commits no row after the takeover.
func (x *pageTx) Fence(ctx context.Context, key string, token int64) error {
	fences := sqlkit.QuoteTable(&contract.Table{Schema: x.schema, Name: fencesName})
	op := "fence the page in " + fences
	if !x.p.fenced[fences] && x.created != fences {
		// A savepoint, so that a concurrent creation (a unique violation
		// on the catalog) does not abort the page.
		if _, err := x.tx.Exec(ctx, `SAVEPOINT idemsync_fences`); err != nil {
			return x.p.dbError(op, err)
		}
		if _, err := x.tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+fences+` (
			key text PRIMARY KEY,
			token bigint NOT NULL,
			at timestamptz NOT NULL DEFAULT now())`); err != nil {
			if _, rerr := x.tx.Exec(ctx, `ROLLBACK TO SAVEPOINT idemsync_fences`); rerr != nil {
				return x.p.dbError(op, rerr)
			}
		} else if _, err := x.tx.Exec(ctx, `RELEASE SAVEPOINT idemsync_fences`); err != nil {
			return x.p.dbError(op, err)
		}
		x.created = fences
	}
	var held int64
	err := x.tx.QueryRow(ctx, `INSERT INTO `+fences+` AS f (key, token) VALUES ($1, $2)
		ON CONFLICT (key) DO UPDATE SET token = excluded.token, at = now() WHERE f.token <= excluded.token
		RETURNING token`, key, token).Scan(&held)
	if errors.Is(err, pgx.ErrNoRows) {
		return &contract.Error{
			Class: contract.Locked,
			Msg:   fmt.Sprintf("the target refused the page: job %s's lease token %d was superseded by a newer holder", key, token),
			Hint:  "another process took the job over (this one was paused or partitioned past its lease); it continues the run",
			Err:   contract.ErrLocked,
		}
	}
	if err != nil {
		return x.p.dbError(op, err)
	}
	return nil
}
