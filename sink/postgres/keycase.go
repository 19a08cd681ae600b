package postgres

import (
	"errors"
	"fmt"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
	"github.com/jackc/pgx/v5/pgconn"
)

// mergeError translates an error of the merge statement. Keys idemsync
// holds different but the table's unique key holds equal (a key column of
// type citext or with a nondeterministic collation: 'Bob' and 'BOB') make
// PostgreSQL refuse to write one row twice in one statement (SQLSTATE
// 21000); the error then names the table and the key column instead of
// the database's words. Other errors go through dbError.
func (p *Sink) mergeError(op string, t *contract.Table, types map[string]string, err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "21000" {
		return p.dbError(op, err)
	}
	// Name the citext key columns; a collation is not in types, so
	// without one every key column is named.
	var cols []string
	for _, k := range t.Key {
		if strings.Contains(types[k], "citext") {
			cols = append(cols, k)
		}
	}
	if len(cols) == 0 {
		cols = t.Key
	}
	what := "key column " + cols[0]
	if len(cols) > 1 {
		what = "key columns " + strings.Join(cols, ", ")
	}
	return &contract.Error{
		Class: contract.Permanent,
		Msg: fmt.Sprintf("%s: two records of the page have keys that %s of table %s holds equal (citext or a case-insensitive collation: 'Bob' and 'BOB'); PostgreSQL takes them for one row and cannot write it twice in one page",
			op, what, t),
		Hint: fmt.Sprintf("make the key compare exactly (ALTER TABLE %s ALTER COLUMN %s TYPE text COLLATE \"C\"), or map a key the source keeps unique",
			sqlkit.QuoteTable(t), sqlkit.QuoteIdent(cols[0])),
	}
}
