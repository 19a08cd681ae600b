package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/idemsync/idemsync/contract"
	idsync "github.com/idemsync/idemsync/sync"
)

// What run does when another run of the job holds its lock (--if-running,
// docs/operations.md, "A second host").
const (
	ifRunningSkip = "skip" // exit 0 with a status naming the holder
	ifRunningFail = "fail" // exit 4
	ifRunningWait = "wait" // wait for the lock, at most wait when given
)

// waitPoll is how often --if-running wait tries the lock again.
var waitPoll = 500 * time.Millisecond

// runGate is how run takes the job's lock: --if-running and --run-key.
type runGate struct {
	ifRunning string
	wait      time.Duration // with wait: the longest wait (0: no limit)
	key       string        // --run-key or $IDEMSYNC_RUN_KEY ("" : none)
	// scope is added to key where it is stored: the --resource selection
	// of a job file with several resources ("" for the whole file), so
	// one key names one start of one selection (docs/operations.md, "Run
	// keys"). It begins with a newline, which no key holds.
	scope string
}

// parseIfRunning reads --if-running (or $IDEMSYNC_IF_RUNNING, which from
// names in errors): skip, fail, wait or wait=DURATION; "" is the default,
// which depends on the state store (defaultMode).
func (g *runGate) parseIfRunning(from, v string) error {
	mode, d, hasD := strings.Cut(v, "=")
	switch {
	case v == "":
	case (mode == ifRunningSkip || mode == ifRunningFail) && !hasD:
	case mode == ifRunningWait && !hasD:
	case mode == ifRunningWait:
		dur, err := time.ParseDuration(d)
		if err != nil || dur <= 0 {
			return &usageError{err: fmt.Errorf("%s %s: the wait is a positive duration, such as wait=10m", from, v)}
		}
		g.wait = dur
	default:
		return &usageError{err: fmt.Errorf("%s %q: use skip, fail, wait or wait=DURATION", from, v)}
	}
	g.ifRunning = mode
	return nil
}

// checkKey checks the run key (from --run-key, else $IDEMSYNC_RUN_KEY).
func (g *runGate) checkKey() error {
	from := "--run-key"
	if g.key == "" {
		g.key, from = os.Getenv("IDEMSYNC_RUN_KEY"), "$IDEMSYNC_RUN_KEY"
	}
	if len(g.key) > 200 || strings.IndexFunc(g.key, unicode.IsControl) >= 0 {
		return &usageError{err: fmt.Errorf("%s %q: a run key is at most 200 characters, without control characters", from, g.key)}
	}
	return nil
}

// skippedRun is the status of a run skipped because another holds the
// job (--if-running skip): exit 0.
type skippedRun struct {
	Job        string     `json:"job"`
	Kind       string     `json:"kind"`
	Status     string     `json:"status"` // skipped
	ExitCode   int        `json:"exit_code"`
	Holder     string     `json:"holder"`
	LeaseUntil *time.Time `json:"lease_until,omitempty"` // a state in PostgreSQL: when the holder's lease ends unless renewed
	Reason     string     `json:"reason"`
}

// errSkipped ends a run that --if-running skip skipped; errRepeated one
// whose run key already ran. Neither is a failure.
type errSkipped struct{ status skippedRun }

func (e *errSkipped) Error() string { return e.status.Reason }

type errRepeated struct {
	key    string
	result string // the first run's JSON result
}

func (e *errRepeated) Error() string { return "run key " + e.key + " already ran" }

// acquire takes the run lock of job (the job file's name for several
// resources) as the gate says, and with a run key looks it up: a key
// that already ran returns *errRepeated, a lock another holds with skip
// *errSkipped, both with the lock released. The caller releases the lock
// after recording the key (remember), so a second start of the key that
// waits sees its result.
func (g runGate) acquire(ctx context.Context, store contract.Store, job, kind string) (unlock func(), err error) {
	if g.ifRunning == "" {
		g.ifRunning = defaultMode(store)
	}
	var deadline time.Time
	if g.wait > 0 {
		deadline = time.Now().Add(g.wait)
	}
	for {
		unlock, err = store.Lock(ctx, job)
		if err == nil || !errors.Is(err, contract.ErrLocked) || g.ifRunning == ifRunningFail || g.ifRunning == "" {
			break
		}
		if g.ifRunning == ifRunningSkip {
			return nil, g.skipped(ctx, store, job, kind, err)
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			return nil, fmt.Errorf("waited %s for the lock (--if-running wait=%s): %w", g.wait, g.wait, err)
		}
		select {
		case <-ctx.Done():
			return nil, contract.Errorf(contract.Interrupted, "interrupted while waiting for the lock: %w", contract.ErrInterrupted)
		case <-time.After(waitPoll):
		}
	}
	if err != nil || g.key == "" {
		return unlock, err
	}
	result, found, err := store.RunKey(ctx, job, g.key+g.scope)
	if err != nil || found {
		unlock()
		if err != nil {
			return nil, err
		}
		return nil, &errRepeated{key: g.key, result: result}
	}
	return unlock, nil
}

// defaultMode is what run does without --if-running: on a state file, an
// overlapping run exits 4 at once (a run on one host, as before); on a
// state whose lock is a lease shared by many hosts, the run another host
// holds is skipped with exit 0, which is what a schedule on several hosts
// needs (docs/operations.md, "A second host").
func defaultMode(store contract.Store) string {
	if _, leased := store.(contract.FencedStore); leased {
		return ifRunningSkip
	}
	return ifRunningFail
}

// skipped is the errSkipped of a lock held by another: its holder and, on
// a lease, when the lease ends.
func (g runGate) skipped(ctx context.Context, store contract.Store, job, kind string, lockErr error) error {
	s := skippedRun{Job: job, Kind: kind, Status: "skipped", Reason: lockErr.Error() + "; skipped (--if-running skip)"}
	if st, err := store.Job(ctx, job); err == nil {
		s.Holder = st.Holder
		if !st.LeaseUntil.IsZero() {
			t := st.LeaseUntil.UTC()
			s.LeaseUntil = &t
		}
	}
	if s.Holder == "" {
		s.Holder = "another process"
	}
	return &errSkipped{status: s}
}

// remember records result under the run key once the run exited 0 (a
// failed run is retried under its key). After a signal, or once the
// invocation's --time-limit passed (limitAt, zero: none), it waits for a
// busy state file at most signalMetricsWait, as the metrics do: a key not
// recorded only lets a second start run again (docs/operations.md,
// "--time-limit").
func (g runGate) remember(ctx context.Context, store contract.Store, job string, code int, result any, limitAt time.Time) error {
	if g.key == "" || code != exitOK {
		return nil
	}
	b, err := json.Marshal(result)
	if err != nil {
		return err
	}
	late := ctx.Err() != nil || !limitAt.IsZero() && !time.Now().Before(limitAt)
	ctx = context.WithoutCancel(ctx)
	if late {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, signalMetricsWait)
		defer cancel()
	}
	return store.SaveRunKey(ctx, job, g.key+g.scope, string(b), time.Now())
}

// limitAt is when an invocation started at started with opts passes its
// --time-limit (zero: none).
func limitAt(started time.Time, opts idsync.Options) time.Time {
	if opts.TimeLimit <= 0 {
		return time.Time{}
	}
	return started.Add(opts.TimeLimit)
}

// reported prints the outcome of a run the gate did not let start: a skip
// or a key that already ran (exit 0); ok false for any other error.
func (g runGate) reported(ios *IOStreams, gl *globalOpts, err error) (bool, error) {
	var sk *errSkipped
	var rep *errRepeated
	switch {
	case errors.As(err, &sk):
		if gl.json {
			gl.writeResult(ios, sk.status)
		} else if !gl.quiet {
			fmt.Fprintf(ios.Out, "%s: skipped: %s\n", sk.status.Job, sk.status.Reason)
		}
		return true, nil
	case errors.As(err, &rep):
		var prior map[string]any
		if jerr := json.Unmarshal([]byte(rep.result), &prior); jerr != nil {
			return true, fmt.Errorf("run key %s: the recorded result is not JSON: %w", rep.key, jerr)
		}
		prior["run_key"], prior["repeated"] = rep.key, true
		if gl.json {
			gl.writeResult(ios, prior)
		} else if !gl.quiet {
			fmt.Fprintf(ios.Out, "%v: run key %s already ran (run %v, %v); nothing fetched\n", prior["job"], rep.key, prior["run_id"], prior["status"])
		}
		return true, nil
	}
	return false, err
}

// waitLock takes job's lock, trying again every waitPoll while another
// holds it, until deadline (zero: no limit) or ctx ends; ok false then, or
// on any other error, and the caller's own Lock reports it as it would.
func waitLock(ctx context.Context, store contract.Store, job string, deadline time.Time) (unlock func(), ok bool) {
	for {
		unlock, err := store.Lock(ctx, job)
		switch {
		case err == nil:
			return unlock, true
		case !errors.Is(err, contract.ErrLocked), !deadline.IsZero() && time.Now().After(deadline):
			return nil, false
		}
		select {
		case <-ctx.Done():
			return nil, false
		case <-time.After(waitPoll):
		}
	}
}

// heldStore is the state store as the engine sees it once the command
// took the job's lock: Lock of that job gives the lock already held.
type heldStore struct {
	contract.Store
	job string
}

func (s heldStore) Lock(ctx context.Context, job string) (func(), error) {
	if job == s.job {
		return func() {}, nil
	}
	return s.Store.Lock(ctx, job)
}

// baseStore is the store under a heldStore.
func baseStore(s contract.Store) contract.Store {
	if h, ok := s.(heldStore); ok {
		return h.Store
	}
	return s
}
