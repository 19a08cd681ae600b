package cmd

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/idemsync/idemsync/contract"
	idsync "github.com/idemsync/idemsync/sync"
)

// runMetrics records how one run, resume or replay ended in the job's
// metrics in the state file and, when --metrics-file is set, writes the
// file after the run. The counters are not counted here: each page's
// commit moves them in the state file (docs/operations.md, Metrics), so a
// run without --metrics-file counts too. A nil *runMetrics does nothing.
type runMetrics struct {
	path     string // "" writes no file
	store    contract.Store
	job      string // the job's name (the job file's)
	resource string // the resource's name: the job's for a single-resource job
	started  time.Time
	log      *slog.Logger
	// limitAt is when the run's --time-limit passes (zero: none): after
	// it the record waits for a busy state file as after a signal.
	limitAt time.Time
	// noFile leaves writing the file to the caller (a job with several
	// resources writes one file with all of them, after the last).
	noFile bool
	// skipped is 1 when the run ended with its sweep skipped.
	skipped int64
	totals  contract.MetricsTotals // after finish
}

// newRunMetrics returns the tracker for a run of a single-resource job.
func newRunMetrics(path string, store contract.Store, job *idsync.Job, started time.Time, log *slog.Logger) *runMetrics {
	return newResourceMetrics(path, store, job.Name, job.Name, started, log)
}

// newResourceMetrics returns the tracker for a run of one resource of job.
func newResourceMetrics(path string, store contract.Store, job, resource string, started time.Time, log *slog.Logger) *runMetrics {
	return &runMetrics{path: path, store: store, job: job, resource: resource, started: started, log: log}
}

// onSweepSkipped counts a full pass that ended with its sweep skipped.
func (m *runMetrics) onSweepSkipped(string) {
	if m != nil {
		m.skipped++
	}
}

// signalMetricsWait is how long the record of a run stopped by a signal,
// or ended after its --time-limit passed, waits for a state file another
// process keeps busy: the record is best effort, and the process must not
// outlast the signal or the limit by the file's busy timeout
// (docs/operations.md, "Signals", "--time-limit").
const signalMetricsWait = time.Second

// finish records the run that ended with err in the state file and writes
// the metrics file (when asked for, unless noFile). A failure to do either
// is logged as a warning and never changes the run's outcome.
func (m *runMetrics) finish(ctx context.Context, err error) {
	if m == nil {
		return
	}
	signalled := ctx.Err() != nil || !m.limitAt.IsZero() && !time.Now().Before(m.limitAt)
	ctx = context.WithoutCancel(ctx) // an interrupted run is recorded too
	if signalled {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, signalMetricsWait)
		defer cancel()
	}
	add := contract.RunMetrics{At: time.Now(), Duration: time.Since(m.started),
		ExitCode: exitCode(err), Success: err == nil, SweepsSkipped: m.skipped}
	totals, err := m.store.AddRunMetrics(ctx, m.job, m.resource, add)
	if err != nil {
		m.log.Warn("metrics not recorded", "err", err)
		return
	}
	m.totals = totals
	if m.noFile || m.path == "" {
		return
	}
	if err := writeMetricsFile(m.path, totals); err != nil {
		m.log.Warn("metrics file not written", "path", m.path, "err", err)
	}
}

// writeMetricsFile writes ts (one per resource) in the Prometheus text format to path
// atomically: a temporary file in the same folder, synced, then renamed
// over path, so node_exporter's textfile collector never reads half a file.
func writeMetricsFile(path string, ts ...contract.MetricsTotals) error {
	var buf bytes.Buffer
	for _, mf := range mergeFamilies(ts) {
		mf.writeText(&buf)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) //nolint:errcheck // gone after the rename
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// metricFamilies are the metrics of docs/operations.md (Metrics),
// labelled job and resource.
func metricFamilies(t contract.MetricsTotals) []family {
	labels := func(extra ...string) []string {
		return append([]string{"job", t.Job, "resource", t.Resource}, extra...)
	}
	gauge := func(name, help string, v float64) family {
		return family{name: name, help: help, kind: "gauge", samples: []sample{{labels(), v}}}
	}
	counter := func(v int64, extra ...string) sample {
		return sample{labels(extra...), float64(v)}
	}
	records := family{name: "idemsync_records_total", kind: "counter",
		help: "Records committed over the job's life, by outcome.",
		samples: []sample{
			counter(t.Inserted, "outcome", "inserted"), counter(t.Updated, "outcome", "updated"),
			counter(t.Unchanged, "outcome", "unchanged"), counter(t.Skipped, "outcome", "skipped"),
			counter(t.Deleted, "outcome", "deleted"),
		}}
	pages := family{name: "idemsync_pages_total", kind: "counter",
		help: "Pages committed over the job's life.", samples: []sample{counter(t.Pages)}}
	skipped := family{name: "idemsync_sweeps_skipped_total", kind: "counter",
		help:    "Full passes that ended with their sweep skipped: they could not prove their records absent (docs/deletions.md).",
		samples: []sample{counter(t.SweepsSkipped)}}
	return []family{
		gauge("idemsync_last_run_timestamp_seconds", "When the last run ended (Unix time).", unixSeconds(t.LastRun)),
		gauge("idemsync_last_success_timestamp_seconds", "When the last run that exited 0 ended (Unix time); 0 before the first.", unixSeconds(t.LastSuccess)),
		gauge("idemsync_run_duration_seconds", "How long the last run took.", t.LastDuration.Seconds()),
		records,
		pages,
		skipped,
		gauge("idemsync_last_exit_code", "The last run's exit code.", float64(t.LastExitCode)),
		gauge("idemsync_pending_deletes", "Rows the last sweep did not see but kept: the next full pass removes those it misses too (docs/deletions.md).", float64(t.PendingDeletes)),
	}
}

// mergeFamilies is the metric families of every resource's totals, each
// family once with a series per resource.
func mergeFamilies(ts []contract.MetricsTotals) []family {
	var out []family
	for i, t := range ts {
		for j, mf := range metricFamilies(t) {
			if i == 0 {
				out = append(out, mf)
				continue
			}
			out[j].samples = append(out[j].samples, mf.samples...)
		}
	}
	return out
}

// unixSeconds is t as Unix seconds with fractions; 0 for the zero time.
func unixSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}
