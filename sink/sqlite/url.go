package sqlite

import (
	"context"
	"log/slog"
	"os"
	"strings"

	"github.com/idemsync/idemsync/contract"
)

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
