package cmd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/idemsync/idemsync/checkpoint"
	"github.com/idemsync/idemsync/checkpoint/pgstate"
	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink"
	"github.com/idemsync/idemsync/sink/sqlkit"
	idsync "github.com/idemsync/idemsync/sync"
)

// openStore opens the state store at path: the one place that knows the
// concrete store (docs/architecture.md, "The state store"); everything
// else takes a contract.Store. A postgres:// URL is a state in PostgreSQL
// (docs/operations.md, "State in PostgreSQL"); another URL is refused;
// anything else is a SQLite state file.
func openStore(ctx context.Context, path string, log *slog.Logger) (contract.Store, error) {
	switch {
	case pgstate.IsURL(path):
		return pgstate.Open(ctx, path, log)
	case strings.Contains(path, "://"):
		return nil, &contract.Error{Class: contract.Invalid,
			Msg:  fmt.Sprintf("state %s: not a state this idemsync keeps", stateName(path)),
			Hint: "use a file path or a postgres:// URL"}
	case keyValueDSN(path):
		return nil, &contract.Error{Class: contract.Invalid,
			Msg:  fmt.Sprintf("state %s: a key=value connection string, not a state file's path", stateName(path)),
			Hint: "write a state in PostgreSQL as a URL: postgres://USER:PASSWORD@HOST:5432/DATABASE (docs/operations.md, \"State in PostgreSQL\")"}
	}
	return checkpoint.Open(ctx, path, log)
}

// dsnKey is a keyword of a PostgreSQL key=value connection string.
var dsnKey = regexp.MustCompile(`(?i)^(host|hostaddr|port|dbname|user|password|passfile|sslmode|sslpassword|service|options|connect_timeout|application_name)=`)

// keyValueDSN reports whether path, a state that is no URL (made absolute
// when it came from a job file), is a key=value connection string
// ("host=db user=app password=…"): taken for a file's path, it would
// create a state file named after it, password and all.
func keyValueDSN(path string) bool {
	fields := strings.Fields(path)
	for i, f := range fields {
		if dsnKey.MatchString(f) || i == 0 && dsnKey.MatchString(filepath.Base(f)) {
			return true
		}
	}
	return false
}

// checkStateTarget refuses (exit 2) a job whose SQLite target is the
// state file at path itself: its table would be written among the
// state's, or a table named like one of them (runs, jobs) altered into
// the state (docs/job-file.md, "target").
func checkStateTarget(path string, job *idsync.Job) error {
	if !sink.SameFile(job.Target.URL, path) {
		return nil
	}
	return &contract.Error{Class: contract.Invalid,
		Msg:  fmt.Sprintf("job %s: target.url %s is the state file %s", job.Name, job.Target.URL, stateName(path)),
		Hint: "give the target another file (target.url), or the state another path (--state, IDEMSYNC_STATE, the job's state:)"}
}

// stateJoinsTarget reports whether the state at path lives in the target
// database at target, so that a page's checkpoint commits in its rows'
// transaction (docs/guarantees.md, "One transaction per page").
func stateJoinsTarget(path, target string) bool {
	return pgstate.SameDatabase(path, target)
}

// stateMissing reports whether no state exists at path yet: the commands
// that only read it (status, prune) never create a state file. A state in
// PostgreSQL is opened (its schema created when missing) to know.
func stateMissing(path string) bool {
	if strings.Contains(path, "://") || keyValueDSN(path) {
		return false // opening it says what it is
	}
	_, err := os.Stat(path)
	return errors.Is(err, fs.ErrNotExist)
}

// stateName is path as it may be printed: a URL or a key=value
// connection string without its password.
func stateName(path string) string {
	if strings.Contains(path, "://") || keyValueDSN(path) {
		return sqlkit.RedactURL(path)
	}
	return path
}

// realPath is the state at path as one identity, whatever path reaches it
// (a job's identity as a writer of its table is its name and this,
// cmd/owners.go): for the state file, path made absolute with its symlinks
// resolved (those of its folder when the file does not exist yet); for a
// URL, the URL without its password.
func realPath(path string) string {
	if strings.Contains(path, "://") {
		return sqlkit.RedactURL(path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	if d, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(d, filepath.Base(abs))
	}
	return abs
}
