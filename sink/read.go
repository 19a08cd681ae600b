package sink

import (
	"context"
	"log/slog"
	"os"
	"strings"

	idsync "github.com/idemsync/idemsync/sync"
)

// ReadTarget is a target opened to be read: its rows and how to close it.
type ReadTarget interface {
	idsync.RowReader
	Close() error
}

var (
	_ ReadTarget = (*SQLite)(nil)
	_ ReadTarget = (*Postgres)(nil)
)

// OpenRead opens a job's target to read its table back. Unlike OpenTarget
// it never creates anything: a SQLite file that does not exist yet is an
// *idsync.Error (exit 1) saying that the job has not written anything. It
// otherwise fails as Open does.
func OpenRead(ctx context.Context, t *idsync.Target, logger *slog.Logger) (ReadTarget, error) {
	if strings.HasPrefix(strings.ToLower(t.URL), "sqlite:") {
		path, err := sqlitePath(t.URL)
		if err != nil {
			return nil, err
		}
		if path != ":memory:" {
			if _, err := os.Stat(path); err != nil {
				return nil, &idsync.Error{Code: idsync.ExitPermanent, Msg: "target database " + path + " does not exist",
					Hint: "run the job first: nothing has been written yet"}
			}
		}
		return OpenSQLite(ctx, path, logger)
	}
	s, err := Open(ctx, t.URL, logger)
	if err != nil {
		return nil, err
	}
	return s.(ReadTarget), nil
}

// readColumns drops the content hash column from a table's column names
// and returns the names kept with the SQL list that selects each one as
// text (cast, e.g. `CAST(%s AS TEXT)` or `%s::text`).
func readColumns(all []string, cast string) ([]string, string) {
	var keep, sel []string
	for _, c := range all {
		if c == idsync.ColHash {
			continue
		}
		keep = append(keep, c)
		sel = append(sel, strings.Replace(cast, "%s", QuoteIdent(c), 1))
	}
	return keep, strings.Join(sel, ", ")
}

// missingTable is the error for a table that does not exist yet.
func missingTable(t *idsync.Table) error {
	return &idsync.Error{Code: idsync.ExitPermanent, Msg: "table " + t.String() + " does not exist",
		Hint: "run the job first: it creates the table"}
}

// scanText scans a row of nullable text columns.
func scanText(n int, scan func(dest ...any) error) ([]*string, error) {
	vals := make([]*string, n)
	dest := make([]any, n)
	for i := range vals {
		dest[i] = &vals[i]
	}
	if err := scan(dest...); err != nil {
		return nil, err
	}
	return vals, nil
}
