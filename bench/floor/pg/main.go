// Command pg is the floor of one ledger call on a PostgreSQL state: a Go
// program that connects with pgx (as idemsync does, no statement cache)
// and runs one INSERT, and nothing else. `go run ./bench -ledger -pg URL`
// times it beside `idemsync key` (docs/ledger.md, "Speed").
//
//	pg URL TABLE KEY
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5"
)

func main() {
	if err := insert(os.Args[1], os.Args[2], os.Args[3]); err != nil {
		fmt.Fprintln(os.Stderr, "pg floor:", err)
		os.Exit(1)
	}
}

func insert(url, table, key string) error {
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return err
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeExec
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `INSERT INTO `+pgx.Identifier{table}.Sanitize()+` (key, token) VALUES ($1, 't')`, key)
	return err
}
