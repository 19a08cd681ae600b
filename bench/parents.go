package main

import (
	"bytes"
	"database/sql"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// parentsMemory measures what a child run costs over a parent table of n
// rows (docs/job-file.md, "Parent → child fan-out"): its peak RSS,
// and how much the state file grows per child run. The parent table is
// written by one orders run of a small shop, then filled up to n rows in
// SQL; each child run walks parent_rows: all and stops after 20 pages, so
// the figures are what reading the parents costs, not the children.
func (b *bench) parentsMemory(n int) error {
	fmt.Printf("\n## a child run over %d parent rows (parent_rows: all, stopped after 20 pages)\n", n)
	shop := fakeapi.NewShop(fakeapi.ShopOptions{Parents: 100, ChildCount: func(int) int { return 1 }, Seed: 1})
	srv := httptest.NewServer(shop)
	defer srv.Close()
	dir := filepath.Join(b.dir, "parents")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	db := filepath.Join(dir, "out.db")
	job := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(job, []byte(fanoutJob(srv.URL, 10, 8, "sqlite:"+db)), 0o600); err != nil {
		return err
	}
	state := filepath.Join(dir, "state.db")
	exe := func(args ...string) (int64, error) {
		c := exec.Command(b.bin, append([]string{"run", job, "--json", "--quiet", "--state", state}, args...)...)
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		if err := c.Start(); err != nil {
			return 0, err
		}
		peak := watchPeakRSS(c.Process.Pid)
		err := c.Wait()
		rss := peak()
		if err != nil {
			return 0, fmt.Errorf("run %v: %v: %s", args, err, out.String())
		}
		return rss, nil
	}
	if _, err := exe("--resource", "orders"); err != nil {
		return err
	}
	if err := fillParents(db, n); err != nil {
		return err
	}
	size := func() int64 {
		var total int64
		for _, suffix := range []string{"", "-wal"} {
			if st, err := os.Stat(state + suffix); err == nil {
				total += st.Size()
			}
		}
		return total
	}
	before := size()
	rss, err := exe("--resource", "order_items", "--max-pages", "20")
	if err != nil {
		return err
	}
	if _, err := exe("--resource", "order_items", "--restart", "--max-pages", "20"); err != nil {
		return err
	}
	grew := size() - before
	fmt.Printf("peak RSS of a child run: %.1f MiB (goal <= 64 MiB); state file grew %.1f KiB over 2 child runs (goal: no copy of the parent table)\n",
		float64(rss)/(1<<20), float64(grew)/1024)
	return nil
}

// fillParents adds rows to the orders table of db, copies of order 1 with
// new ids, up to n rows.
func fillParents(db string, n int) error {
	conn, err := sql.Open("sqlite", db)
	if err != nil {
		return err
	}
	defer conn.Close()
	rows, err := conn.Query(`SELECT name FROM pragma_table_info('orders')`)
	if err != nil {
		return err
	}
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			rows.Close()
			return err
		}
		cols = append(cols, `"`+c+`"`)
	}
	rows.Close()
	sel := make([]string, len(cols))
	for i, c := range cols {
		sel[i] = "o." + c
		if c == `"id"` {
			sel[i] = "s.x"
		}
	}
	q := fmt.Sprintf(`WITH RECURSIVE s(x) AS (SELECT (SELECT max(id) FROM orders) + 1 UNION ALL SELECT x + 1 FROM s WHERE x < %d)
		INSERT INTO orders (%s) SELECT %s FROM s, orders o WHERE o.id = 1`, n, strings.Join(cols, ", "), strings.Join(sel, ", "))
	_, err = conn.Exec(q)
	return err
}
