// Command sqlite is the floor of one ledger call on a SQLite state: a Go
// program that opens a SQLite file with the state file's settings (WAL,
// synchronous FULL, busy timeout, BEGIN IMMEDIATE) and commits one INSERT,
// and nothing else. `go run ./bench -ledger` times it beside `idemsync
// key` (docs/ledger.md, "Speed").
//
//	sqlite FILE KEY
package main

import (
	"database/sql"
	"fmt"
	"os"

	_ "modernc.org/sqlite"
)

func main() {
	if err := insert(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "sqlite floor:", err)
		os.Exit(1)
	}
}

func insert(file, key string) error {
	db, err := sql.Open("sqlite", "file://"+file+"?_pragma=busy_timeout(10000)&_pragma=synchronous(FULL)&_txlock=immediate")
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Exec(`PRAGMA journal_mode = WAL`); err != nil {
		return err
	}
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS floor (key TEXT PRIMARY KEY, token TEXT NOT NULL) STRICT`); err != nil {
		return err
	}
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	if _, err := tx.Exec(`INSERT INTO floor (key, token) VALUES (?, 't')`, key); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}
