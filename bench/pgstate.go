package main

import (
	"context"
	"fmt"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// leaseFigures prints what the state in PostgreSQL costs a page commit
// (docs/performance.md, "State in PostgreSQL"): a first load into a
// PostgreSQL target with a SQLite state file (today's figure), with the
// state in PostgreSQL elsewhere by its URL (each page checks the lease in
// the state's transaction and the token in the target's: goal within 5%),
// and with the state in the target's database (one transaction per page).
func leaseFigures(pgURL string, records, size, repeat int) error {
	if pgURL == "" {
		return fmt.Errorf("-pgstate needs -pg URL")
	}
	b, done, err := newBench()
	if err != nil {
		return err
	}
	defer done()
	api, stop, err := serve(records, 0)
	if err != nil {
		return err
	}
	defer stop()
	fmt.Printf("\n## state in PostgreSQL: %d records in pages of %d into a PostgreSQL target (median of %d runs)\n", records, size, repeat)
	other, err := otherRoute(pgURL)
	if err != nil {
		return err
	}
	modes := []struct{ name, what string }{
		{"file", "SQLite state file"},
		{"fenced", "PostgreSQL state, lease checked per page, target fenced"},
		{"joined", "PostgreSQL state in the target's database, one transaction per page"},
	}
	walls := map[string][]measured{}
	for i := range repeat {
		for _, m := range modes {
			table := "bench_lease_" + m.name
			if err := dropPostgresTable(pgURL, table); err != nil {
				return err
			}
			schema := fmt.Sprintf("bench_state_%s_%d", m.name, i)
			var state string
			switch m.name {
			case "file":
				state = filepath.Join(b.dir, fmt.Sprintf("lease-%s-%d.db", m.name, i))
			case "fenced":
				state = withSchema(other, schema)
			case "joined":
				state = withSchema(pgURL, schema)
			}
			job := replaceTable(pageJob(api, size, 1, pgURL), table)
			if err := b.prepareState(state); err != nil {
				return err
			}
			ms, _, err := b.timedRun(fmt.Sprintf("lease-%s-%d", m.name, i), job, state)
			dropSchema(pgURL, schema)
			if err != nil {
				return err
			}
			walls[m.name] = append(walls[m.name], ms)
		}
	}
	var rows []row
	for _, m := range modes {
		rows = append(rows, row{name: m.what, wall: median(walls[m.name]).wall, cpu: median(walls[m.name]).cpu})
	}
	b.table(records, rows)
	file, fenced, joined := median(walls["file"]).wall, median(walls["fenced"]).wall, median(walls["joined"]).wall
	fmt.Printf("ratio: lease and fence %+.1f%% over a SQLite state file (goal <= 5%%); one transaction per page %+.1f%%, %.0f records/s\n",
		100*(fenced.Seconds()-file.Seconds())/file.Seconds(), 100*(joined.Seconds()-file.Seconds())/file.Seconds(),
		float64(records)/joined.Seconds())
	// The client's CPU beside the wall: on a loaded machine the wall
	// holds other processes' time, the CPU only idemsync's.
	fileCPU, fencedCPU, joinedCPU := medianCPU(walls["file"]), medianCPU(walls["fenced"]), medianCPU(walls["joined"])
	fmt.Printf("cpu: %.2fs SQLite state file, %.2fs lease and fence (%+.1f%%), %.2fs one transaction per page (%+.1f%%)\n",
		fileCPU.Seconds(), fencedCPU.Seconds(), 100*(fencedCPU.Seconds()-fileCPU.Seconds())/fileCPU.Seconds(),
		joinedCPU.Seconds(), 100*(joinedCPU.Seconds()-fileCPU.Seconds())/fileCPU.Seconds())
	for _, m := range modes {
		_ = dropPostgresTable(pgURL, "bench_lease_"+m.name)
	}
	return nil
}

// otherRoute is pgURL by another name of the same host (127.0.0.1 and
// localhost): idemsync then keeps the state and the target apart.
func otherRoute(pgURL string) (string, error) {
	u, err := url.Parse(pgURL)
	if err != nil {
		return "", err
	}
	switch u.Hostname() {
	case "127.0.0.1":
		u.Host = strings.Replace(u.Host, "127.0.0.1", "localhost", 1)
	case "localhost":
		u.Host = strings.Replace(u.Host, "localhost", "127.0.0.1", 1)
	default:
		return "", fmt.Errorf("-pgstate needs the server at 127.0.0.1 or localhost (it reaches the state by the other name)")
	}
	return u.String(), nil
}

func withSchema(pgURL, schema string) string {
	u, _ := url.Parse(pgURL)
	q := u.Query()
	q.Set("schema", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func dropSchema(pgURL, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	_, _ = conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
}

// prepareState creates the state's schema (a PostgreSQL state; a state
// file costs nothing to create), as it exists for every run but a job's
// first: the timed run measures the pages.
func (b *bench) prepareState(state string) error {
	if out, err := exec.Command(b.bin, "status", "--state", state).CombinedOutput(); err != nil {
		return fmt.Errorf("create the state %s: %v: %s", state, err, out)
	}
	return nil
}
