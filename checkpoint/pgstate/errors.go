package pgstate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/jackc/pgx/v5/pgconn"
)

// errNewer marks a schema written by a newer idemsync; errNotOurs one
// that holds another application's tables.
var (
	errNewer   = errors.New("state written by a newer idemsync")
	errNotOurs = errors.New("the schema holds tables that are not an idemsync state")
)

const (
	hintNewer   = "upgrade idemsync to the version that wrote this state"
	hintNotOurs = "choose another schema with ?schema= in the state URL"
	hintDown    = "the state's database could not be reached or was busy; try again"
)

// transient reports whether err is worth trying again: the database could
// not be reached, dropped the connection, or gave up on a conflict.
func transient(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "40001", pgErr.Code == "40P01", pgErr.Code == "55P03",
			pgErr.Code == "57014", // a statement_timeout set on the role or the database
			strings.HasPrefix(pgErr.Code, "08"), strings.HasPrefix(pgErr.Code, "53"),
			strings.HasPrefix(pgErr.Code, "57P"):
			return true
		}
		return false
	}
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		pgconn.SafeToRetry(err) || pgconn.Timeout(err)
}

// wrap is the error callers see for a failed operation op: an
// *contract.Error naming the state, exit 3 when the database was unreachable
// or busy, exit 1 otherwise; an error that already carries an exit code
// (a lost lease, a run taken over) keeps it. A cancelled or expired
// context stays visible as such.
func (s *Store) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	msg := fmt.Sprintf("state %s: %s", s.display, op)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", msg, err)
	}
	var ie *contract.Error
	if errors.As(err, &ie) && ie.Class != contract.Permanent {
		return err
	}
	code, hint := contract.Permanent, ""
	switch {
	case errors.Is(err, errNewer):
		hint = hintNewer
	case errors.Is(err, errNotOurs):
		hint = hintNotOurs
	case transient(err):
		code, hint = contract.Transient, hintDown
	}
	return &contract.Error{Class: code, Msg: msg, Hint: hint, Err: err}
}
