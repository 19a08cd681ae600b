package pgstate

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The PostgreSQL state has its own numbered migrations
// (migrations/NNNN_name.sql, {S} standing for the schema), recorded in
// {S}.idemsync_schema; the SQLite file's are checkpoint/migrations.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in order; a malformed name
// is a build defect, caught by every test.
func migrations() []migration {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		panic(err)
	}
	var ms []migration
	for _, e := range entries {
		num, _, _ := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if err != nil || v <= 0 {
			panic("pgstate: bad migration name " + e.Name())
		}
		body, err := fs.ReadFile(migrationFS, path.Join("migrations", e.Name()))
		if err != nil {
			panic(err)
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	return ms
}

func latestVersion() int {
	ms := migrations()
	return ms[len(ms)-1].version
}

type queryRower interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// version returns the highest migration applied to the schema (0 for a
// schema or version table that does not exist).
func (s *Store) version(ctx context.Context, q queryRower) (int, error) {
	var exists bool
	if err := q.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, s.schema+".idemsync_schema").Scan(&exists); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	if !exists {
		return 0, nil
	}
	var v int
	if err := q.QueryRow(ctx, s.q(`SELECT coalesce(max(version), 0) FROM {S}.idemsync_schema`)).Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

// migrate brings the schema up to date in one transaction, and refuses a
// schema written by a newer idemsync or holding tables of another
// application. Two hosts migrating at once: the loser of the race to
// create the schema or its version table tries again and finds it done;
// the version table's row lock orders later steps.
func (s *Store) migrate(ctx context.Context) error {
	var err error
	for range 3 {
		if err = s.migrateOnce(ctx); !raced(err) {
			return err
		}
	}
	return err
}

// raced reports an error of two creators of one object.
func raced(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "23505" || pgErr.Code == "42P06" || pgErr.Code == "42P07")
}

// notNewerNow reads the schema's version again and returns errNewer when
// a newer idemsync migrated it since this store opened it (Lock, after a
// wait for another host's lease).
func (s *Store) notNewerNow(ctx context.Context) error {
	ms := migrations()
	latest := ms[len(ms)-1].version
	v, err := s.version(ctx, s.pool)
	if err != nil {
		return err
	}
	if v > latest {
		return fmt.Errorf("%w: schema %s is at version %d, this idemsync knows %d", errNewer, s.name, v, latest)
	}
	return nil
}

func (s *Store) migrateOnce(ctx context.Context) error {
	ms := migrations()
	latest := ms[len(ms)-1].version
	v, err := s.version(ctx, s.pool)
	if err != nil {
		return err
	}
	if v > latest {
		return fmt.Errorf("%w: schema %s is at version %d, this idemsync knows %d", errNewer, s.name, v, latest)
	}
	if v == latest {
		return nil
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if v == 0 {
			if err := s.checkEmpty(ctx, tx); err != nil {
				return err
			}
			if err := s.checkCase(ctx, tx); err != nil {
				return err
			}
		}
		// CREATE SCHEMA IF NOT EXISTS needs the database's CREATE privilege
		// even when the schema exists: a schema made beforehand for a role
		// without it (docs/operations.md, "State in PostgreSQL") is used
		// as it is.
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, s.name).Scan(&exists); err != nil {
			return fmt.Errorf("look for schema: %w", err)
		}
		if !exists {
			if _, err := tx.Exec(ctx, s.q(`CREATE SCHEMA IF NOT EXISTS {S}`)); err != nil {
				return fmt.Errorf("create schema: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, s.q(`CREATE TABLE IF NOT EXISTS {S}.idemsync_schema (
			version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)); err != nil {
			return fmt.Errorf("create version table: %w", err)
		}
		if _, err := tx.Exec(ctx, s.q(`LOCK TABLE {S}.idemsync_schema IN EXCLUSIVE MODE`)); err != nil {
			return fmt.Errorf("lock version table: %w", err)
		}
		cur, err := s.version(ctx, tx)
		if err != nil {
			return err
		}
		if cur > latest {
			return fmt.Errorf("%w: schema %s is at version %d, this idemsync knows %d", errNewer, s.name, cur, latest)
		}
		for _, m := range ms {
			if m.version <= cur {
				continue
			}
			if _, err := tx.Exec(ctx, s.q(m.sql)); err != nil {
				return fmt.Errorf("apply migration %s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, s.q(`INSERT INTO {S}.idemsync_schema (version, name) VALUES ($1, $2)`), m.version, m.name); err != nil {
				return fmt.Errorf("record migration %s: %w", m.name, err)
			}
		}
		if cur < latest {
			s.log.Info("state schema migrated", "schema", s.name, "from", cur, "to", latest)
		}
		return nil
	})
}

// checkEmpty refuses a schema without our version table that already
// holds tables: another application's, never modified. The tables and
// the version table are read by one statement: a second opener that
// found no version table before a racing first opener committed its
// migration sees, here, both or neither, and the version read under the
// lock that follows finds the migration done.
func (s *Store) checkEmpty(ctx context.Context, tx pgx.Tx) error {
	var n int
	var ours bool
	if err := tx.QueryRow(ctx, `SELECT count(*), coalesce(bool_or(tablename = 'idemsync_schema'), false)
		FROM pg_tables WHERE schemaname = $1`, s.name).Scan(&n, &ours); err != nil {
		return fmt.Errorf("inspect schema: %w", err)
	}
	if n > 0 && !ours {
		return fmt.Errorf("%w: schema %s has %d tables and no idemsync_schema", errNotOurs, s.name, n)
	}
	return nil
}

// checkCase refuses a new state whose schema name differs only in case
// from another schema's: ?schema= is a quoted identifier, so Ledger and
// ledger are two schemas, and a host configured with the other spelling
// would keep a state and a ledger of its own, where both hosts acquire
// the same key (docs/operations.md, "State in PostgreSQL"). A new
// schema's name is lower case, as PostgreSQL folds a name written
// without quotes; a schema that exists is used as it is.
func (s *Store) checkCase(ctx context.Context, tx pgx.Tx) error {
	var exists bool
	var other, otherState *string
	if err := tx.QueryRow(ctx, `SELECT
		EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1),
		(SELECT min(nspname) FROM pg_namespace WHERE lower(nspname) = lower($1) AND nspname <> $1),
		(SELECT min(schemaname) FROM pg_tables WHERE lower(schemaname) = lower($1) AND schemaname <> $1
			AND tablename = 'idemsync_schema')`, s.name).Scan(&exists, &other, &otherState); err != nil {
		return fmt.Errorf("look for schema: %w", err)
	}
	refuse := func(format string, args ...any) error {
		return &contract.Error{Class: contract.Invalid, Msg: fmt.Sprintf("state %s: ", s.display) + fmt.Sprintf(format, args...)}
	}
	switch {
	case otherState != nil:
		return refuse("schema %q holds no idemsync state, but %q does: PostgreSQL tells the two names apart, "+
			"so they would be two states whose ledgers both acquire the same key; use ?schema=%s", s.name, *otherState, *otherState)
	case !exists && other != nil:
		return refuse("schema %q does not exist, but %q does: PostgreSQL tells the two names apart; use ?schema=%s",
			s.name, *other, *other)
	case !exists && s.name != strings.ToLower(s.name):
		return refuse("schema %q does not exist, and a new schema's name is lower case: PostgreSQL folds %s "+
			"written without quotes to %s, so the two spellings would be two states; use ?schema=%s",
			s.name, s.name, strings.ToLower(s.name), strings.ToLower(s.name))
	}
	return nil
}
