package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	gosync "sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/idemsync/idemsync/examples/invoices/fakes"
)

// invoiceRig runs the invoices story's processes (examples/invoices):
// the sync (idemsync run invoices.yaml) and the sender (reminders.sh:
// idemsync changes, key, curl, changes ack), each in a process group of
// its own so that a SIGKILL takes the sender's idemsync and curl with it.
type invoiceRig struct {
	t      *testing.T
	env    []string
	job    string
	script string
	dir    string
}

// run starts the sync (sync) or the sender, SIGKILLs its process group
// when kill fires (nil: never) and returns its exit code (-1: killed).
func (r *invoiceRig) run(sync bool, kill <-chan time.Time) int {
	c := exec.Command(binary, "run", r.job, "--quiet")
	if !sync {
		c = exec.Command("bash", r.script)
	}
	c.Dir, c.Env = r.dir, r.env
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		r.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	var err error
	if kill != nil {
		select {
		case err = <-done:
		case <-kill:
			syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
			<-done
			return -1
		}
	} else {
		select {
		case err = <-done:
		case <-time.After(3 * time.Minute):
			syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
			r.t.Fatalf("%v hangs:\n%s", c.Args, out.String())
		}
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if code := ee.ExitCode(); code == 1 || code == 2 {
			r.t.Fatalf("%v: exit %d (a permanent failure or bad usage)\n%s", c.Args, code, out.String())
		}
		return ee.ExitCode()
	}
	r.t.Fatalf("%v: %v", c.Args, err)
	return 0
}

var (
	invoiceSeed   = flag.Uint64("invoice-seed", 0, "invoices acceptance test: the seed of its draws (0: from the clock)")
	invoiceNights = flag.Int("invoice-nights", envInt("IDEMSYNC_INVOICE_NIGHTS", 0), "invoices acceptance test: nights per database (0: 5 on SQLite, 3 on PostgreSQL; also IDEMSYNC_INVOICE_NIGHTS)")
)

// The acceptance test of the invoices story (issue 26, docs/changes.md):
// many nights of new and updated invoices, on SQLite and PostgreSQL
// targets. Each night, syncs and senders run one or two at a time
// (overlapping), most of them SIGKILLed at a random moment: during a
// sync's pages, the sender's changes, claim, email or ack. The billing
// API fails and hangs past the sync's timeout; the email API fails
// before accepting, and after accepting (a 500, or a hang past curl's
// timeout: the sender cannot tell the reminder went out); each night
// one sender is killed during such a hang. After the
// chaos, runs catch up: a sync that completes, then senders until one
// finds the feed drained. Invariant, checked after every chaotic step:
// no invoice ever got two reminders; after each night's catch-up: every
// invoice that exists got exactly one; every reminder whose claim lease
// ended without an outcome (expired_unknown) is in the sender's report.
func TestInvoicesAcceptance(t *testing.T) {
	if testing.Short() {
		t.Skip("many nights of SIGKILLs")
	}
	for _, tool := range []string{"bash", "jq", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			// The two databases' nights share nothing (folder, fakes,
			// servers, state file, schema) and mostly wait (leases,
			// hangs, kills by the clock): they run at once.
			t.Parallel()
			dir := t.TempDir()
			target, table, nights := "sqlite:"+filepath.Join(dir, "billing.db"), "invoices", 5
			if db == "postgres" {
				pg := postgresURL(t)
				target, table, nights = pg, freshSchema(t, pg)+".invoices", 3
			}
			if *invoiceNights > 0 {
				nights = *invoiceNights
			}
			seed := *invoiceSeed
			if seed == 0 {
				seed = uint64(time.Now().UnixNano())
			}
			t.Logf("seed %d", seed)
			t.Cleanup(func() {
				if t.Failed() {
					// The seed fixes every draw; the kills and hangs still
					// land by the clock, so a rerun replays the same plan.
					t.Logf("reproduce: go test ./e2e -run 'TestInvoicesAcceptance/%s$' -invoice-seed %d -invoice-nights %d -v", db, seed, nights)
				}
			})
			rnd := rand.New(rand.NewPCG(seed, 3))
			billing := fakes.NewBilling(seed)
			billing.FailRate, billing.HangRate, billing.Hang = 0.05, 0.03, 1500*time.Millisecond
			email := fakes.NewEmail(seed)
			email.FailBefore, email.FailAfter, email.HangAfter, email.Hang = 0.1, 0.1, 0.05, 1500*time.Millisecond
			// armed, when set, hears of the next email request 300ms after
			// it arrived: accepted, and hanging.
			var armed atomic.Pointer[chan time.Time]
			mail := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				if p := armed.Load(); p != nil {
					ch := *p
					time.AfterFunc(300*time.Millisecond, func() {
						select {
						case ch <- time.Now():
						default:
						}
					})
				}
				email.ServeHTTP(w, req)
			})
			job, _ := filepath.Abs("../examples/invoices/invoices.yaml")
			script, _ := filepath.Abs("../examples/invoices/reminders.sh")
			state, report := filepath.Join(dir, "state.db"), filepath.Join(dir, "expired_unknown.log")
			r := &invoiceRig{t: t, job: job, script: script, dir: dir, env: append(cleanEnv(),
				"PATH="+filepath.Dir(binary)+string(os.PathListSeparator)+os.Getenv("PATH"),
				"BILLING_URL="+serve(t, billing), "EMAIL_URL="+serve(t, mail),
				"INVOICES_TARGET="+target, "INVOICES_TABLE="+table, "IDEMSYNC_STATE="+state,
				"JOB="+job, "REPORT="+report, "LEASE=2s", "CLAIM_TTL=2s")}
			for night := 1; night <= nights; night++ {
				billing.Add(5 + rnd.IntN(10))
				billing.Update(3)
				// A sender killed while the email API, having accepted its
				// reminder, hangs: the claim's lease ends without an
				// outcome (expired_unknown), which must be reported.
				for r.run(true, nil) != 0 {
				}
				email.Faults(0, 0, 1)
				accepted := make(chan time.Time, 1)
				armed.Store(&accepted)
				r.run(false, accepted)
				armed.Store(nil)
				email.Faults(0.1, 0.1, 0.05)
				var killed int
				for step := range 6 {
					var wg gosync.WaitGroup
					var mu gosync.Mutex
					for range 1 + rnd.IntN(2) { // one, or two overlapping
						sync, kill := rnd.IntN(2) == 0, (<-chan time.Time)(nil)
						if rnd.IntN(4) > 0 {
							kill = time.After(time.Duration(50+rnd.IntN(2500)) * time.Millisecond)
						}
						wg.Add(1)
						go func() {
							defer wg.Done()
							if r.run(sync, kill) == -1 {
								mu.Lock()
								killed++
								mu.Unlock()
							}
						}()
					}
					wg.Wait()
					if twice := email.Twice(); len(twice) > 0 {
						t.Fatalf("night %d, step %d: invoices reminded twice: %v", night, step, twice)
					}
				}
				r.catchUp(night, billing, email)
				reported := readReport(t, report)
				for _, k := range ledgerKeys(t, r, state) {
					if k.UnknownLeases > 0 && !reported[k.Key] {
						t.Errorf("night %d: %s had %d lease(s) end without an outcome, never reported", night, k.Key, k.UnknownLeases)
					}
				}
				t.Logf("night %d: %d invoices, each reminded once; %d processes killed; %d expired_unknown reported", night, len(billing.IDs()), killed, len(reported))
			}
			if len(readReport(t, report)) == 0 {
				t.Error("no expired_unknown was ever reported: the nights never killed a sender between an accepted email and its complete")
			}
		})
	}
}

// catchUp runs the sync until it completes, then the sender until it
// finds the feed drained, and checks that every invoice got exactly one
// reminder.
func (r *invoiceRig) catchUp(night int, billing *fakes.Billing, email *fakes.Email) {
	t := r.t
	deadline := time.Now().Add(2 * time.Minute)
	for code := r.run(true, nil); code != 0; code = r.run(true, nil) {
		if time.Now().After(deadline) {
			t.Fatalf("night %d: the sync never completed (last exit %d)", night, code)
		}
	}
	for code := r.run(false, nil); code != 0; code = r.run(false, nil) {
		if time.Now().After(deadline) {
			t.Fatalf("night %d: the sender never caught up (last exit %d); delivered %v", night, code, email.Delivered())
		}
		time.Sleep(300 * time.Millisecond) // a lease or a retry's not-before
	}
	got := email.Delivered()
	for _, id := range billing.IDs() {
		if n := got[strconv.Itoa(id)]; n != 1 {
			t.Errorf("night %d: invoice %d got %d reminders once caught up, want 1", night, id, n)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// readReport returns the keys the sender reported as expired_unknown.
func readReport(t *testing.T, path string) map[string]bool {
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if k, _, ok := strings.Cut(l, " "); ok {
			out[k] = true
		}
	}
	return out
}

// ledgerKeys lists the reminders' ledger keys.
func ledgerKeys(t *testing.T, r *invoiceRig, state string) []struct {
	Key           string `json:"key"`
	UnknownLeases int64  `json:"unknown_leases"`
} {
	res := idemsync(t, r.dir, []string{"IDEMSYNC_STATE=" + state}, "key", "list", "--ns", "reminders", "--limit", "100000")
	var list struct {
		Keys []struct {
			Key           string `json:"key"`
			UnknownLeases int64  `json:"unknown_leases"`
		} `json:"keys"`
	}
	if res.code != 0 || json.Unmarshal([]byte(res.stdout), &list) != nil {
		t.Fatalf("key list: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	return list.Keys
}
