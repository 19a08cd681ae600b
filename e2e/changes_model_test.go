package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/idemsync/idemsync/examples/invoices/fakes"
	"github.com/idemsync/idemsync/feed"
	"github.com/jackc/pgx/v5"
)

var (
	changesSeeds   = flag.Int("changes-seeds", envInt("IDEMSYNC_CHANGES_SEEDS", 6), "change feed model test: how many seeds on SQLite (also IDEMSYNC_CHANGES_SEEDS)")
	changesPGSeeds = flag.Int("changes-pg-seeds", envInt("IDEMSYNC_CHANGES_PG_SEEDS", 3), "change feed model test: how many seeds on PostgreSQL (also IDEMSYNC_CHANGES_PG_SEEDS)")
	changesSeed    = flag.Int64("changes-seed", -1, "change feed model test: run only this seed")
)

// changesModelSource is the model's source, mapping and feed: the billing
// API's invoices in small pages (many points to be killed at). Its
// argument is the target.deletes.
const changesModelSource = `  source: {records: data, timeout: 1s}
  pagination: {style: page, size_param: per_page, size: 7, total_pages: meta.total_pages}
  retry: {attempts: 8, min_wait: 20ms, max_wait: 200ms}
  target:
    key: [id]
    columns:
      id: {path: id, type: integer}
      customer: customer
      amount: {path: amount, type: numeric}
      status: status
      updated_at: {path: updated_at, type: timestamp}
    changes: true
    deletes: %s
`

// changesModelJob is the model's job file: one resource, the job itself,
// or several in one feed, each an API of its own at api/NAME/invoices
// written to the table of its name (in schema, when not empty).
func changesModelJob(api, target, schema, deletes string, resources []string) string {
	qualified := func(table string) string {
		if schema == "" {
			return table
		}
		return schema + "." + table
	}
	if len(resources) == 1 && resources[0] == "feedmodel" {
		// The one-resource form: source, pagination and target at the top.
		body := strings.ReplaceAll(fmt.Sprintf(changesModelSource, deletes), "\n  ", "\n")
		body = strings.TrimPrefix(body, "  ")
		body = strings.Replace(body, "source: {records", "source: {url: "+api+"/feedmodel/invoices, records", 1)
		body = strings.Replace(body, "target:\n", "target:\n  url: "+target+"\n  table: "+qualified("invoices")+"\n", 1)
		return "name: feedmodel\n" + body
	}
	var b strings.Builder
	b.WriteString("name: feedmodel\ndefaults:\n" + fmt.Sprintf(changesModelSource, deletes))
	b.WriteString("    url: " + target + "\nresources:\n")
	for _, r := range resources {
		fmt.Fprintf(&b, "  - name: %s\n    source: {url: %s/%s/invoices}\n    target: {table: %s}\n", r, api, r, qualified(r))
	}
	return b.String()
}

// The change feed's model test (docs/changes.md), seeded, on SQLite and
// PostgreSQL: a billing API whose invoices are added, changed and removed
// between steps (the job's target.deletes keep, hard or soft by the seed),
// as one resource or two in one feed (runs of one --resource now and
// then), syncs SIGKILLed at random moments, consumers (every event,
// inserts only, updates only, one resource) reading leased batches (now
// and then from two processes at once: at most one gets events),
// acknowledging them whole or in part, letting leases lapse, killed while reading or
// acknowledging, and prunes of what every consumer acknowledged. After
// every exit, killed or not:
//   - the feed and the table agree: each live row's last event is an
//     insert or an update carrying the row's stored hash, a removed or
//     marked row's a deletion carrying the hash it had; a key's first event
//     is its insert, and no update repeats the hash before it (an unchanged
//     row records nothing); an event's number never changes meaning;
//   - a prune removed nothing above what every consumer acknowledged;
//   - a batch starts where its consumer acknowledged, and holds exactly
//     the events of its consumer's kinds in its range, in order: none
//     skipped; a second batch comes only once the first's lease ran out.
//
// Once the API is healthy again and the runs caught up, every consumer
// has acknowledged every event of its kinds, and the table's live rows
// are the API's invoices. A failing seed prints the command that runs it again.
func TestChangesModel(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the change feed's model test runs the binary many times")
	}
	seeds := func(t *testing.T, db string, n int) {
		for i := range n {
			seed := *modelSeedStart + int64(i)
			if *changesSeed >= 0 {
				if i > 0 {
					break
				}
				seed = *changesSeed
			}
			t.Run(strconv.FormatInt(seed, 10), func(t *testing.T) {
				t.Parallel()
				m := newChangesModel(t, db, seed)
				t.Cleanup(func() {
					if t.Failed() {
						t.Logf("reproduce: go test ./e2e -run 'TestChangesModel/%s/%d$' -changes-seed %d -v", db, seed, seed)
					}
				})
				m.play(t)
			})
		}
	}
	t.Run("sqlite", func(t *testing.T) { seeds(t, "sqlite", *changesSeeds) })
	t.Run("postgres", func(t *testing.T) {
		postgresURL(t)
		seeds(t, "postgres", *changesPGSeeds)
	})
}

// feedConsumer is the model of one consumer.
type feedConsumer struct {
	name, ops string
	resource  string         // --resource, when set
	acked     int64          // its acknowledged position
	out       *feed.Batch    // its batch not yet acknowledged, when known
	leaseEnd  time.Time      // out's lease, by the batch's lease_expires
	busyUntil time.Time      // a killed read may hold a batch unknown to the model until then
	got       map[int64]bool // events it acknowledged
}

func (c *feedConsumer) wants(e feedEvent) bool {
	return (c.ops == "" || strings.Contains(c.ops, e.op)) && (c.resource == "" || c.resource == e.resource)
}

// feedEvent is one event as the model keeps it.
type feedEvent struct{ resource, key, op, hash string }

// row is the event's key in the model: resource/key.
func (e feedEvent) row() string { return e.resource + "/" + e.key }

// feedRow is one row of the table: its stored hash, and whether a soft
// sweep marked it deleted.
type feedRow struct {
	hash   string
	marked bool
}

type changesModel struct {
	seed      int64
	rnd       *rand.Rand
	resources []string                  // the job's resources: feedmodel alone, or invoices and credits
	billings  map[string]*fakes.Billing // each resource's API
	dir, job  string
	consumers []*feedConsumer
	deletes   string              // the job's target.deletes: keep, hard or soft
	events    map[int64]feedEvent // every event ever seen, by number
	floor     int64               // a prune may have removed events up to here
	// truth reads the feed's events and the tables' rows (by resource/id).
	truth func(t *testing.T) (map[int64]feedEvent, []int64, map[string]feedRow)
	log   []string
	tally map[string]int // what the seed did, for its summary line
}

func newChangesModel(t *testing.T, db string, seed int64) *changesModel {
	m := &changesModel{seed: seed, rnd: rand.New(rand.NewPCG(uint64(seed), 26)), billings: map[string]*fakes.Billing{},
		dir: t.TempDir(), events: map[int64]feedEvent{}, tally: map[string]int{}}
	m.deletes = []string{"keep", "hard", "soft"}[m.rnd.IntN(3)]
	m.resources = []string{"feedmodel"}
	if m.rnd.IntN(2) == 0 {
		m.resources = []string{"invoices", "credits"}
	}
	mux := http.NewServeMux()
	for i, r := range m.resources {
		b := fakes.NewBilling(uint64(seed)*10 + uint64(i))
		b.FailRate, b.HangRate, b.Hang = 0.05, 0.02, 1500*time.Millisecond
		m.billings[r] = b
		mux.Handle("/"+r+"/", http.StripPrefix("/"+r, b))
	}
	api := serve(t, mux)
	target, schema := "sqlite:"+filepath.Join(m.dir, "billing.db"), ""
	var query func(t *testing.T, q string, each func(scan func(...any) error) error)
	if db == "postgres" {
		pg := postgresURL(t)
		schema = freshSchema(t, pg)
		target = pg
		query = func(t *testing.T, q string, each func(scan func(...any) error) error) {
			t.Helper()
			pgQuery(t, pg, strings.ReplaceAll(q, "{S}", pgx.Identifier{schema}.Sanitize()+"."), each)
		}
	} else {
		query = func(t *testing.T, q string, each func(scan func(...any) error) error) {
			t.Helper()
			db, err := sql.Open("sqlite", filepath.Join(m.dir, "billing.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			rows, err := db.Query(strings.ReplaceAll(q, "{S}", ""))
			if err == nil {
				defer rows.Close()
			}
			eachRow(t, q, rows, err, "no such table", each)
		}
	}
	marked := "(1 = 0)"
	if m.deletes == "soft" {
		marked = "(_idemsync_deleted_at IS NOT NULL)"
	}
	m.truth = func(t *testing.T) (map[int64]feedEvent, []int64, map[string]feedRow) {
		t.Helper()
		evs, order, table := map[int64]feedEvent{}, []int64(nil), map[string]feedRow{}
		query(t, `SELECT seq, CAST(resource AS TEXT), CAST(key AS TEXT), CAST(op AS TEXT), CAST(coalesce(hash, '') AS TEXT) FROM {S}idemsync_changes WHERE job = 'feedmodel' ORDER BY seq`, func(scan func(...any) error) error {
			var seq int64
			var e feedEvent
			if err := scan(&seq, &e.resource, &e.key, &e.op, &e.hash); err != nil {
				return err
			}
			evs[seq], order = e, append(order, seq)
			return nil
		})
		for _, res := range m.resources {
			name := res
			if res == "feedmodel" {
				name = "invoices"
			}
			query(t, `SELECT CAST(id AS TEXT), CAST(_idemsync_hash AS TEXT), `+marked+` FROM {S}`+name, func(scan func(...any) error) error {
				var id string
				var r feedRow
				if err := scan(&id, &r.hash, &r.marked); err != nil {
					return err
				}
				k := res + "/" + id
				if _, dup := table[k]; dup {
					return fmt.Errorf("key %s twice in the table", k)
				}
				table[k] = r
				return nil
			})
		}
		return evs, order, table
	}
	m.job = writeJob(t, m.dir, "job.yaml", changesModelJob(api, target, schema, m.deletes, m.resources))
	m.consumers = []*feedConsumer{{name: "all"}, {name: "inserts", ops: "I"}, {name: "updates", ops: "U"}}
	if len(m.resources) > 1 {
		m.consumers = append(m.consumers, &feedConsumer{name: "credits", resource: "credits"})
	}
	for _, c := range m.consumers {
		c.got = map[int64]bool{}
	}
	return m
}

// pgQuery runs q on the PostgreSQL server at url and hands each row to
// each; a missing table or schema reads as no rows.
func pgQuery(t *testing.T, url, q string, each func(scan func(...any) error) error) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, q)
	if err == nil {
		defer rows.Close()
	}
	eachRow(t, q, rows, err, "does not exist", each)
}

// eachRow hands each row of the result of query q (database/sql's or
// pgx's rows, or the error of the query) to each; an error that names a
// missing table (missing) reads as no rows.
func eachRow(t *testing.T, q string, rows interface {
	Next() bool
	Scan(...any) error
	Err() error
}, err error, missing string, each func(scan func(...any) error) error) {
	t.Helper()
	if err == nil {
		for err == nil && rows.Next() {
			err = each(rows.Scan)
		}
		if err == nil {
			err = rows.Err()
		}
	}
	if err != nil && !strings.Contains(err.Error(), missing) {
		t.Fatalf("%s: %v", q, err)
	}
}

func (m *changesModel) note(format string, args ...any) {
	m.log = append(m.log, fmt.Sprintf(format, args...))
}

// fail ends the seed with the steps that led to it.
func (m *changesModel) fail(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Fatalf("seed %d: %s\nsteps:\n  %s", m.seed, fmt.Sprintf(format, args...), strings.Join(m.log, "\n  "))
}

func (m *changesModel) play(t *testing.T) {
	// A first sync creates the table, then every consumer starts at the
	// feed's start before any prune: a prune never leaves one a gap.
	for _, res := range m.resources { // in order: the seed's draws are its own
		m.billings[res].Add(10 + m.rnd.IntN(15))
	}
	for i := 0; m.sync(t, 0, false) != 0; i++ {
		if i == 8 {
			m.fail(t, "no first sync completed")
		}
	}
	m.check(t)
	for _, c := range m.consumers {
		m.read(t, c, false)
	}
	for step := range 40 {
		switch r := m.rnd.IntN(20); {
		case r < 3:
			res := m.resources[m.rnd.IntN(len(m.resources))]
			b := m.billings[res]
			n := 1 + m.rnd.IntN(8)
			b.Add(n)
			u := m.rnd.IntN(5)
			b.Update(u)
			var gone []int
			if len(b.IDs()) > 12 && m.rnd.IntN(2) == 0 {
				gone = b.Remove(1 + m.rnd.IntN(2))
			}
			m.note("%d: the %s API adds %d invoices, changes %d, removes %v", step, res, n, u, gone)
		case r < 9:
			m.sync(t, step, m.rnd.IntN(2) == 0)
		case r < 13:
			m.read(t, m.consumers[m.rnd.IntN(len(m.consumers))], m.rnd.IntN(7) == 0)
		case r < 14:
			m.race(t, m.consumers[m.rnd.IntN(len(m.consumers))])
		case r < 18:
			m.ack(t, m.consumers[m.rnd.IntN(len(m.consumers))], m.rnd.IntN(7) == 0)
		default:
			m.prune(t, m.rnd.IntN(5) == 0)
		}
		m.check(t)
	}
	// Catch up: a healthy API, a sync that completes, every consumer
	// reading and acknowledging until its feed is drained.
	invoices := 0
	for _, b := range m.billings {
		b.FailRate, b.HangRate = 0, 0
		invoices += len(b.IDs())
	}
	// A run resuming a killed one may miss invoices that the removals
	// moved into pages it had read before them; the next pass sees them.
	// With deletes, a removed invoice goes at the second full pass that
	// misses it (docs/deletions.md, "Two passes").
	caughtUp := func() bool {
		live := m.live(t)
		if m.deletes != "keep" && len(live) != invoices {
			return false
		}
		for res, b := range m.billings {
			for _, id := range b.IDs() {
				if !live[res+"/"+strconv.Itoa(id)] {
					return false
				}
			}
		}
		return true
	}
	for i := 0; ; i++ {
		if m.sync(t, -1, false) == 0 && caughtUp() {
			break
		}
		if i == 8 {
			m.fail(t, "the tables never caught up with the APIs: %d live rows, %d invoices", len(m.live(t)), invoices)
		}
	}
	m.check(t)
	for _, c := range m.consumers {
		time.Sleep(time.Until(c.busyUntil))
		for i := 0; ; i++ {
			if c.out != nil && time.Now().Before(c.leaseEnd) {
				m.ack(t, c, false)
				continue
			}
			time.Sleep(time.Until(c.leaseEnd.Add(50 * time.Millisecond)))
			b := m.read(t, c, false)
			if b != nil && len(b.Events) == 0 {
				break
			}
			if b == nil { // refused: a batch of a killed read is still under lease
				time.Sleep(200 * time.Millisecond)
			}
			if i == 100 {
				m.fail(t, "consumer %s is never drained", c.name)
			}
		}
		var missing []int64
		for seq, e := range m.events {
			if c.wants(e) && !c.got[seq] {
				missing = append(missing, seq)
			}
		}
		slices.Sort(missing)
		if len(missing) > 0 {
			m.fail(t, "consumer %s (ops %q) never acknowledged events %v", c.name, c.ops, missing)
		}
	}
	rows := m.live(t)
	if len(rows) != invoices && m.deletes != "keep" {
		m.fail(t, "the tables hold %d live invoices, the APIs %d", len(rows), invoices)
	}
	for res, b := range m.billings {
		for _, id := range b.IDs() {
			if !rows[res+"/"+strconv.Itoa(id)] {
				m.fail(t, "invoice %s/%d is not in the table", res, id)
			}
		}
	}
	ops := map[string]int{}
	for _, e := range m.events {
		ops[e.op]++
	}
	t.Logf("seed %d (resources %v, deletes %s): %d invoices, events %v, every consumer acknowledged all of its kinds; %v", m.seed, m.resources, m.deletes, invoices, ops, m.tally)
}

// invoke runs the binary, SIGKILLed after a random moment when kill.
func (m *changesModel) invoke(t *testing.T, kill bool, maxWait time.Duration, args ...string) modelExit {
	t.Helper()
	var when func() bool
	if kill {
		start, after := time.Now(), time.Duration(m.rnd.Int64N(int64(maxWait)))
		when = func() bool { return time.Since(start) > after }
	}
	return modelInvoke(t, m.dir, when, args...)
}

// sync runs the job, killed at a random moment when kill, and returns
// its exit code (-1: killed).
func (m *changesModel) sync(t *testing.T, step int, kill bool) int {
	t.Helper()
	args := []string{"run", m.job}
	if len(m.resources) > 1 && step >= 0 && m.rnd.IntN(3) == 0 {
		args = append(args, "--resource", m.resources[m.rnd.IntN(len(m.resources))])
	}
	r := m.invoke(t, kill, 1500*time.Millisecond, args...)
	m.note("%d: %v, killed %v: exit %d", step, args[2:], kill, r.code)
	m.tally[fmt.Sprintf("run exit %d", r.code)]++
	switch {
	case r.code == 0, r.code == 3, r.code == -1:
	case r.code == 4 && pgState() && strings.Contains(r.stderr, "was lost; this process stops without writing"):
		// A holder whose lease a loaded host kept from being renewed
		// stops without writing, as a kill does (docs/fault-tolerance.md).
	default:
		m.fail(t, "run: exit %d\n%s", r.code, r.stderr)
	}
	return r.code
}

// read asks for c's next batch and checks it; it returns the batch, nil
// when the read was killed or refused.
func (m *changesModel) read(t *testing.T, c *feedConsumer, kill bool) *feed.Batch {
	t.Helper()
	lease := []time.Duration{300 * time.Millisecond, time.Second, 3 * time.Second}[m.rnd.IntN(3)]
	args := m.readArgs(c, lease)
	asked := time.Now()
	r := m.invoke(t, kill, 150*time.Millisecond, args...)
	m.note("read %s (lease %s), killed %v: exit %d %s", c.name, lease, kill, r.code, strings.TrimSpace(r.stdout))
	return m.judge(t, c, args, lease, asked, r)
}

// readArgs is a read of c's next batch under lease, of a random size.
func (m *changesModel) readArgs(c *feedConsumer, lease time.Duration) []string {
	args := []string{"changes", m.job, "--consumer", c.name, "--limit", strconv.Itoa(1 + m.rnd.IntN(12)), "--lease", lease.String()}
	if c.ops != "" {
		args = append(args, "--ops", c.ops)
	}
	if c.resource != "" {
		args = append(args, "--resource", c.resource)
	}
	return args
}

// race has two processes read c's next batch at once (two workers of one
// consumer): at most one may get events, the other is refused (exit 4)
// or, when nothing is pending, gets an empty batch too.
func (m *changesModel) race(t *testing.T, c *feedConsumer) {
	t.Helper()
	lease := 3 * time.Second
	args := m.readArgs(c, lease)
	asked := time.Now()
	var rs [2]modelExit
	var wg gosync.WaitGroup
	for i := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rs[i] = modelInvoke(t, m.dir, nil, args...)
		}()
	}
	wg.Wait()
	m.tally["two readers at once"]++
	// Judged in the order of their leases' start; a batch's lease starts
	// when it is read (read checks the second against the first).
	start := func(r modelExit) string {
		var b feed.Batch
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &b) != nil || b.ID == "" {
			return "~" // refused or empty: after the batch taken, if any
		}
		return b.LeaseExpires
	}
	if start(rs[1]) < start(rs[0]) {
		rs[0], rs[1] = rs[1], rs[0]
	}
	for _, r := range rs {
		m.note("read %s (lease %s), racing another: exit %d %s", c.name, lease, r.code, strings.TrimSpace(r.stdout))
		m.judge(t, c, args, lease, asked, r)
	}
}

// judge checks the outcome r of a read of c's next batch, asked at asked
// with args and lease, and moves the model on.
func (m *changesModel) judge(t *testing.T, c *feedConsumer, args []string, lease time.Duration, asked time.Time, r modelExit) *feed.Batch {
	t.Helper()
	m.tally[fmt.Sprintf("read exit %d", r.code)]++
	if r.code == 0 && c.out != nil {
		m.tally["lapsed batch read again"]++
	}
	const margin = 500 * time.Millisecond
	switch r.code {
	case -1:
		// It may have taken a batch, which the model does not know; or
		// been refused while the batch before was under lease.
		end := time.Now().Add(lease)
		if c.out != nil && c.leaseEnd.After(end) {
			end = c.leaseEnd
		}
		// An earlier killed read's batch may outlast this one's.
		c.out, c.busyUntil = nil, maxTime(c.busyUntil, end.Add(margin))
		return nil
	case 4:
		leased := c.out != nil && asked.Before(c.leaseEnd.Add(margin))
		if !leased && asked.After(c.busyUntil) {
			m.fail(t, "consumer %s refused a batch (exit 4) with none of its batches under lease\n%s", c.name, r.stderr)
		}
		return nil
	case 0:
	default:
		m.fail(t, "%v: exit %d\n%s", args, r.code, r.stderr)
	}
	var b feed.Batch
	if err := json.Unmarshal([]byte(r.stdout), &b); err != nil {
		m.fail(t, "%v: %v\n%s", args, err, r.stdout)
	}
	// An empty batch reports the position it moved the consumer to
	// (past events its filters pass over), a batch the one it starts after.
	if (b.ID != "" && b.After != c.acked) || (b.ID == "" && b.After != b.Through) || b.Through < c.acked {
		m.fail(t, "consumer %s's batch %q is %d to %d; it acknowledged %d", c.name, b.ID, b.After, b.Through, c.acked)
	}
	truth, _, _ := m.truth(t)
	var want []int64
	for seq, e := range truth {
		if seq > c.acked && seq <= b.Through && c.wants(e) {
			want = append(want, seq)
		}
	}
	slices.Sort(want)
	var got []int64
	for i, e := range b.Events {
		if i > 0 && e.Seq <= b.Events[i-1].Seq {
			m.fail(t, "consumer %s's batch %s is out of order at %d", c.name, b.ID, e.Seq)
		}
		got = append(got, e.Seq)
		ev := feedEvent{resource: e.Resource, key: e.Key, op: e.Op, hash: e.Hash}
		if te, ok := truth[e.Seq]; ok && te != ev {
			m.fail(t, "event %d: delivered as %+v, stored as %+v", e.Seq, ev, te)
		}
		m.see(t, e.Seq, ev)
	}
	if !slices.Equal(got, want) {
		m.fail(t, "consumer %s (ops %q, resource %q), batch %q (%d to %d): events %v, the feed holds %v in that range", c.name, c.ops, c.resource, b.ID, c.acked+1, b.Through, got, want)
	}
	if b.ID == "" {
		// Nothing to deliver: events passed over by the filters are
		// acknowledged at once.
		c.out, c.leaseEnd = nil, time.Time{}
		if at := m.position(t, c); at != b.Through {
			m.fail(t, "consumer %s is at %d after an empty batch through %d", c.name, at, b.Through)
		}
		c.acked = b.Through
		return &b
	}
	end, err := time.Parse(time.RFC3339Nano, b.LeaseExpires)
	if err != nil {
		m.fail(t, "batch %s: lease_expires %q: %v", b.ID, b.LeaseExpires, err)
	}
	// The batch's lease began when it was read, by the clock leases are
	// measured with (the database's on PostgreSQL): the batch before must
	// have lapsed by then.
	if read := end.Add(-lease); c.out != nil && read.Before(c.leaseEnd) {
		m.fail(t, "consumer %s got batch %s at %s while batch %s was under lease until %s", c.name, b.ID,
			read.Format(time.RFC3339Nano), c.out.ID, c.leaseEnd.Format(time.RFC3339Nano))
	}
	c.out, c.leaseEnd = &b, end
	return &b
}

// ack acknowledges c's batch, whole or in part, and checks that a
// second ack of it is stale.
func (m *changesModel) ack(t *testing.T, c *feedConsumer, kill bool) {
	t.Helper()
	b := c.out
	if b == nil {
		return
	}
	through := b.Through
	args := []string{"changes", "ack", m.job, "--consumer", c.name, "--batch", b.ID}
	if len(b.Events) > 1 && m.rnd.IntN(3) == 0 {
		through = b.Events[m.rnd.IntN(len(b.Events))].Seq
		args = append(args, "--through", strconv.FormatInt(through, 10))
	}
	r := m.invoke(t, kill, 100*time.Millisecond, args...)
	m.note("ack %s batch %s through %d, killed %v: exit %d", c.name, b.ID, through, kill, r.code)
	m.tally[fmt.Sprintf("ack exit %d", r.code)]++
	if through != b.Through {
		m.tally["partial ack"]++
	}
	switch r.code {
	case 0:
	case -1:
		switch at := m.position(t, c); at {
		case through:
		case c.acked:
			return // not acknowledged; the batch is still c's
		default:
			m.fail(t, "consumer %s at %d after a killed ack of %d..%d", c.name, at, c.acked, through)
		}
	default:
		m.fail(t, "%v: exit %d\n%s", args, r.code, r.stderr)
	}
	for _, e := range b.Events {
		if e.Seq <= through {
			c.got[e.Seq] = true
		}
	}
	c.acked, c.out, c.leaseEnd = through, nil, time.Time{}
	if m.rnd.IntN(5) == 0 {
		if r := m.invoke(t, false, 0, "changes", "ack", m.job, "--consumer", c.name, "--batch", b.ID); r.code != 1 || !strings.Contains(r.stderr, "stale") {
			m.fail(t, "a second ack of batch %s: exit %d, want 1 (stale)\n%s", b.ID, r.code, r.stderr)
		}
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// live is the table's rows not marked deleted, by id.
func (m *changesModel) live(t *testing.T) map[string]bool {
	t.Helper()
	_, _, table := m.truth(t)
	out := map[string]bool{}
	for id, r := range table {
		if !r.marked {
			out[id] = true
		}
	}
	return out
}

// position is c's acknowledged position by changes status.
func (m *changesModel) position(t *testing.T, c *feedConsumer) int64 {
	t.Helper()
	r := m.invoke(t, false, 0, "changes", "status", m.job)
	var st feed.Report
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &st) != nil {
		m.fail(t, "changes status: exit %d\n%s", r.code, r.stderr)
	}
	for _, s := range st.Consumers {
		if s.Name == c.name {
			if s.State == "gap" {
				m.fail(t, "consumer %s has a gap: %+v", c.name, s)
			}
			return s.Acked
		}
	}
	m.fail(t, "changes status lists no consumer %s: %s", c.name, r.stdout)
	return 0
}

// prune prunes what every consumer acknowledged; nothing above that may go.
func (m *changesModel) prune(t *testing.T, kill bool) {
	t.Helper()
	low := m.consumers[0].acked
	for _, c := range m.consumers {
		low = min(low, c.acked)
	}
	r := m.invoke(t, kill, 100*time.Millisecond, "prune", m.job, "--keep", "0s")
	m.note("prune (every consumer at %d or past), killed %v: exit %d", low, kill, r.code)
	m.tally[fmt.Sprintf("prune exit %d", r.code)]++
	if r.code != 0 && r.code != -1 {
		m.fail(t, "prune: exit %d\n%s", r.code, r.stderr)
	}
	m.floor = max(m.floor, low)
}

// see records an event; a number never changes meaning.
func (m *changesModel) see(t *testing.T, seq int64, e feedEvent) {
	t.Helper()
	if old, ok := m.events[seq]; ok && old != e {
		m.fail(t, "event %d was %+v and is now %+v", seq, old, e)
	}
	m.events[seq] = e
}

// check holds the feed against the table and against what was seen.
func (m *changesModel) check(t *testing.T) {
	t.Helper()
	truth, order, table := m.truth(t)
	for _, seq := range order {
		m.see(t, seq, truth[seq])
	}
	for seq := range m.events {
		if _, ok := truth[seq]; !ok && seq > m.floor {
			m.fail(t, "event %d is gone, above every consumer's acknowledgement (%d)", seq, m.floor)
		}
	}
	byKey := map[string][]int64{}
	for seq, e := range m.events {
		byKey[e.row()] = append(byKey[e.row()], seq)
	}
	for key, seqs := range byKey {
		slices.Sort(seqs)
		var prev *feedEvent
		for _, seq := range seqs {
			e := m.events[seq]
			var ok bool
			switch e.op {
			case "I": // first, or back after a hard deletion
				ok = prev == nil || (prev.op == "D" && m.deletes == "hard")
			case "U": // a new hash; or a soft-deleted row back, even unchanged
				ok = prev != nil && ((prev.op != "D" && e.hash != prev.hash) || (prev.op == "D" && m.deletes == "soft"))
			case "D": // the hash the row had
				ok = prev != nil && prev.op != "D" && e.hash == prev.hash && m.deletes != "keep"
			}
			if !ok {
				m.fail(t, "key %s (deletes %s): event %d (%s %s) cannot follow %+v: its events %v", key, m.deletes, seq, e.op, e.hash, prev, seqs)
			}
			prev = &e
		}
		last, lastSeq := m.events[seqs[len(seqs)-1]], seqs[len(seqs)-1]
		r, ok := table[key]
		switch {
		case !ok && last.op != "D":
			m.fail(t, "key %s has events %v, the last %d an %s, and no row", key, seqs, lastSeq, last.op)
		case ok && r.marked != (last.op == "D"):
			m.fail(t, "key %s: its last event %d is %s, its row marked deleted %v", key, lastSeq, last.op, r.marked)
		case ok && last.hash != r.hash:
			m.fail(t, "key %s: its last event %d has hash %s, the row %s", key, lastSeq, last.hash, r.hash)
		}
	}
	for key := range table {
		if _, ok := byKey[key]; !ok {
			m.fail(t, "row %s has no event", key)
		}
	}
}
