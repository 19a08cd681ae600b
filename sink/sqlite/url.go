package sqlite

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/idemsync/idemsync/contract"
)

// Schemes are the URL schemes that name an SQLite target, compared
// case-insensitively: sqlite:PATH, sqlite://PATH and sqlite:///abs/path.
var Schemes = []string{"sqlite"}

// Path returns the file path of a sqlite: URL: what follows "sqlite:" and
// an optional "//", relative to the working directory unless absolute;
// ":memory:" names a private in-memory database. It fails with an
// *contract.Error (Invalid) when the URL names no path.
func Path(rawURL string) (string, error) {
	_, path, _ := strings.Cut(rawURL, ":")
	path = strings.TrimPrefix(path, "//") // sqlite://rel/path and sqlite:///abs/path
	if path == "" {
		return "", &contract.Error{
			Class: contract.Invalid,
			Msg:   "target url " + rawURL + " has no file path",
			Hint:  "use sqlite:PATH, e.g. sqlite:out/orders.db",
		}
	}
	return path, nil
}

// OpenTarget opens the SQLite file of a job's target for writing: a file
// that does not exist yet is first created with target.mode (see
// createFile), then opened as Open does. It fails as Path and Open do.
func OpenTarget(ctx context.Context, c contract.Conn, logger *slog.Logger) (*Sink, error) {
	if err := createFile(c); err != nil {
		return nil, err
	}
	path, err := Path(c.URL)
	if err != nil {
		return nil, err
	}
	return Open(ctx, path, logger)
}

// OpenRead opens the SQLite file of a job's target to read its table back.
// It never creates anything: a file that does not exist yet is an
// *contract.Error (Permanent) saying that the job has not written
// anything. It otherwise fails as OpenTarget does.
func OpenRead(ctx context.Context, c contract.Conn, logger *slog.Logger) (*Sink, error) {
	path, err := Path(c.URL)
	if err != nil {
		return nil, err
	}
	if path != ":memory:" {
		if _, err := os.Stat(path); err != nil {
			return nil, &contract.Error{Class: contract.Permanent, Msg: "target database " + path + " does not exist",
				Hint: "run the job first: nothing has been written yet"}
		}
	}
	return Open(ctx, path, logger)
}

// Resolve checks a target URL of this database as the job file gives it
// and returns it with a relative file path made absolute against dir (the
// job file's folder): sqlite:out.db in /jobs is sqlite:/jobs/out.db. It
// fails, with a message for the job file's target.url, when the URL names
// no file.
func Resolve(raw, dir string) (string, error) {
	_, p, _ := strings.Cut(raw, ":")
	p = strings.TrimPrefix(p, "//")
	if p == "" {
		return "", fmt.Errorf("sqlite: needs a file path, e.g. sqlite:out/orders.db")
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return "sqlite:" + abs, nil
}
