package checkpoint

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"

	"github.com/idemsync/idemsync/contract"
)

// newToken returns a random owner token for a Store.
func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// takenOver is the error of a Store that tries to change a run another
// process has taken over: exit 4, like any run locked out by another.
func takenOver(runID int64) error {
	return &contract.Error{
		Class: contract.Locked,
		Msg:   fmt.Sprintf("run %d was taken over by another process; this one stops without changing it", runID),
		Hint:  "two processes ran the same job at once (a lock that does not hold across machines or file systems?); the other one continues the run",
		Err:   contract.ErrLocked,
	}
}

// checkOwner returns takenOver when runID exists, is running, and is owned
// by another Store; nil otherwise (the caller explains other cases).
func (s *Store) ownedElsewhere(ctx context.Context, tx *sql.Tx, runID int64) error {
	var owner, status string
	err := tx.QueryRowContext(ctx, `SELECT owner, status FROM runs WHERE id = ?`, runID).Scan(&owner, &status)
	if err != nil {
		return nil
	}
	if owner != s.token {
		return takenOver(runID)
	}
	return nil
}
