package cmd

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	gosync "sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/feed"
	"github.com/idemsync/idemsync/jobfile"
	"github.com/idemsync/idemsync/ledger"
	"github.com/idemsync/idemsync/serve"
	idsync "github.com/idemsync/idemsync/sync"
)

// serveOptions are the parsed command line of serve.
type serveOptions struct {
	io     *IOStreams
	g      *globalOpts
	listen string
	jobs   string
}

// newCmdServe is serve: the HTTP face (docs/serve.md). The server is
// package serve; what each request does is this package's own commands,
// through serveBackend.
func newCmdServe(f *Factory, runF func(*serveOptions) error) *cobra.Command {
	o := &serveOptions{io: f.IOStreams, g: f.globals}
	c := &cobra.Command{
		Use:   "serve --jobs DIR [--listen 127.0.0.1:8787]",
		Short: "Serve run, status and the change feed of the job files in a folder, and the ledger, over HTTP+JSON (for n8n)",
		Long: `Serve the job files of --jobs over HTTP: POST /jobs/NAME/run is
"idemsync run NAME.yaml --json", GET /jobs/NAME/status is "status --json",
POST /keys/claim|complete|fail|heartbeat and GET /keys/get are "idemsync
key", POST /jobs/NAME/changes and changes/ack are "idemsync changes", with
the same JSON and exit codes (the HTTP status follows from the exit code);
/healthz, /metrics (Prometheus) and /openapi.json describe the rest.

The bearer token is read from $` + serve.TokenEnv + `; it is required unless
--listen is a loopback address. SIGTERM or SIGINT interrupts the runs in
progress as it would a CLI run (checkpoint saved, status interrupted) and
stops the server. See docs/serve.md.`,
		Args: exactArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(o)
			}
			return runServe(c.Context(), o)
		},
	}
	c.Flags().StringVar(&o.listen, "listen", "127.0.0.1:8787", "address to listen on (host:port); off loopback $"+serve.TokenEnv+" must be set")
	c.Flags().StringVar(&o.jobs, "jobs", "", "the folder of job files to serve (required); no other file can be named")
	return c
}

func runServe(ctx context.Context, o *serveOptions) error {
	log, err := newLogger(o.io.ErrOut, o.g.logFormat, o.g.logLevel, o.g.quiet, idsync.NewRedactor(), "")
	if err != nil {
		return &usageError{err: err}
	}
	s, err := serve.New(serve.Config{Listen: o.listen, Jobs: o.jobs, Token: os.Getenv(serve.TokenEnv),
		Backend: &serveBackend{g: o.g, ios: o.io}, Log: log})
	if err != nil {
		return &usageError{err: err}
	}
	if err := s.Serve(ctx); err != nil {
		var ce *serve.ConfigError
		if errors.As(err, &ce) {
			return &usageError{err: err}
		}
		return err
	}
	return nil
}

// serveBackend answers serve's requests with the commands' own functions,
// each request with its own flags (those of the serve command line, and
// --json) and its own stdout, which becomes the reply's body.
type serveBackend struct {
	g   *globalOpts
	ios *IOStreams
	// mu guards running: the job's name of each run in progress, by
	// its job file, read when the run started (a file renamed or edited
	// since is still that job's run: Metrics).
	mu      gosync.Mutex
	running map[string]string
}

var _ serve.Backend = (*serveBackend)(nil)

// call runs one command's function as Execute does and returns what it
// printed and its exit code.
func (b *serveBackend) call(do func(g *globalOpts, ios *IOStreams) error) serve.Reply {
	g := &globalOpts{state: b.g.state, json: true, quiet: b.g.quiet, logFormat: b.g.logFormat, logLevel: b.g.logLevel}
	var out bytes.Buffer
	ios := &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: b.ios.ErrOut}
	code := exitAfter(ios, g, do(g, ios))
	return serve.Reply{Body: out.Bytes(), Code: code}
}

// Run is `idemsync run FILE --json` with the request's flags.
func (b *serveBackend) Run(ctx context.Context, file string, so serve.RunOptions, started func()) serve.Reply {
	o := &runOptions{name: contract.KindRun, file: file, full: so.Full, restart: so.Restart, verify: so.Verify,
		maxPages: so.MaxPages, resources: so.Resources}
	if so.TimeLimit != "" {
		o.timeLimit, _ = time.ParseDuration(so.TimeLimit) // the server checked it
	}
	return b.call(func(g *globalOpts, ios *IOStreams) error {
		// A run already going answers 409 (exit 4), never a second run
		// (docs/serve.md).
		g.onRunStart = func() {
			b.mu.Lock()
			if b.running == nil {
				b.running = map[string]string{}
			}
			b.running[file] = g.jobName
			b.mu.Unlock()
			started()
		}
		defer func() {
			b.mu.Lock()
			delete(b.running, file)
			b.mu.Unlock()
		}()
		return runJob(ctx, g, ios, file, o.engineOptions(), "", o.resources, runGate{ifRunning: ifRunningFail})
	})
}

// Status is `idemsync status FILE --json [--runs N]`.
func (b *serveBackend) Status(ctx context.Context, file string, runs int) serve.Reply {
	return b.call(func(g *globalOpts, ios *IOStreams) error {
		return status(ctx, g, ios, []string{file}, &statusOptions{runs: runs})
	})
}

// Key is `idemsync key ACTION` with the request's fields for its flags
// (a field left out is what the ledger takes for a flag left empty) and
// without --exit-codes: every outcome exits 0, its status says what
// happened.
func (b *serveBackend) Key(ctx context.Context, action string, k serve.KeyRequest) serve.Reply {
	o := &keyOptions{action: action, key: k.Key, ns: k.NS, ttl: k.TTL, params: string(k.Params), fingerprint: k.Fingerprint,
		owner: k.Owner, onExpired: k.OnExpired, poll: keyPoll, token: k.Token, result: string(k.Result),
		retryable: k.Retryable, permanent: k.Permanent, errJSON: string(k.Error)}
	if o.ns == "" { // left out: the server refuses an empty one
		o.ns = ledger.DefaultNS
	}
	if o.ttl == "" { // so are ttl and on_expired
		o.ttl = ledger.DefaultTTL.String()
	}
	if o.onExpired == "" {
		o.onExpired = contract.OnExpiredRetry
	}
	o.wait, _ = time.ParseDuration(k.Wait) // the server checked both
	o.notBefore, _ = time.ParseDuration(k.NotBefore)
	return b.call(func(g *globalOpts, ios *IOStreams) error {
		o.g, o.io = g, ios
		return runKey(ctx, o)
	})
}

// Changes is `idemsync changes FILE` (next), `changes ack FILE` or
// `changes status FILE` with the request's fields for their flags, the
// flags' defaults for those left out, and their usage checks.
func (b *serveBackend) Changes(ctx context.Context, file, action string, c serve.ChangesRequest) serve.Reply {
	o := &changesOptions{file: file, consumer: c.Consumer, resources: c.Resources, ops: c.Ops, limit: c.Limit,
		lease: feed.DefaultLease, batch: c.Batch}
	if c.Through != nil {
		o.through, o.throughSet = *c.Through, true
	}
	if o.limit == 0 {
		o.limit = feed.DefaultLimit
	}
	if c.Lease != "" {
		o.lease, _ = time.ParseDuration(c.Lease) // the server checked it
	}
	return b.call(func(g *globalOpts, ios *IOStreams) error {
		o.g, o.io = g, ios
		switch action {
		case "next":
			if err := o.checkNext(); err != nil {
				return err
			}
			return runChanges(ctx, o)
		case "ack":
			if err := o.checkAck(); err != nil {
				return err
			}
			return runChangesAck(ctx, o)
		}
		return runChangesStatus(ctx, o)
	})
}

// Metrics is the metrics of every resource of files that has run, as
// --metrics-file writes them (docs/operations.md, Metrics), and whether
// each job has a run in progress in the server.
func (b *serveBackend) Metrics(ctx context.Context, files []string, running map[string]bool) ([]byte, error) {
	var all []contract.MetricsTotals
	inProgress := family{name: "idemsync_serve_run_in_progress", kind: "gauge",
		help: "1 while idemsync serve runs the job, else 0."}
	quiet := slog.New(slog.DiscardHandler)
	seen := map[string]int{} // a job's name: its sample in inProgress
	names := map[string]bool{}
	b.mu.Lock()
	for _, name := range b.running {
		names[name] = true
	}
	b.mu.Unlock()
	for _, file := range files {
		jf, _, err := jobfile.LoadForState(file)
		if err != nil {
			continue // an invalid job file has no metrics; its run request says why
		}
		// Files that give the same name (a copy, a symlink under a second
		// name) are one job's series, which the exposition may carry once:
		// the first file's, in progress while any of them runs.
		if i, ok := seen[jf.Name]; ok {
			if running[file] {
				inProgress.samples[i].value = 1
			}
			continue
		}
		seen[jf.Name] = len(inProgress.samples)
		inProgress.samples = append(inProgress.samples, sample{[]string{"job", jf.Name}, boolValue(running[file] || names[jf.Name])})
		path := b.g.statePath(jf.Resources[0].Job)
		if stateMissing(path) {
			continue
		}
		ts, err := jobMetrics(ctx, path, jf, quiet)
		if err != nil {
			return nil, err
		}
		all = append(all, ts...)
	}
	var buf bytes.Buffer
	for _, mf := range mergeFamilies(all) {
		mf.writeText(&buf)
	}
	if len(inProgress.samples) > 0 {
		inProgress.writeText(&buf)
	}
	return buf.Bytes(), nil
}

// jobMetrics reads the totals of each resource of jf that has run from
// the state at path.
func jobMetrics(ctx context.Context, path string, jf *jobfile.File, log *slog.Logger) ([]contract.MetricsTotals, error) {
	store, err := openStore(ctx, path, log)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	var out []contract.MetricsTotals
	for _, r := range jf.Resources {
		job, res := jf.Name, r.Name
		if !jf.Multi {
			job, res = r.Job.Name, r.Job.Name // as newRunMetrics records them
		}
		t, err := store.Metrics(ctx, job, res)
		if err != nil {
			return nil, err
		}
		if !t.LastRun.IsZero() {
			out = append(out, t)
		}
	}
	return out, nil
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
