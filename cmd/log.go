package cmd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"

	idsync "github.com/idemsync/idemsync/sync"
)

// newLogger builds the slog logger every command uses: text or JSON on w,
// at the given level, with every message and string attribute passed through
// the redactor so that no secret reaches a log line. With job != "", every
// line carries job, and run_id once the run has one (traceHandler).
func newLogger(w io.Writer, format, level string, quiet bool, red *idsync.Redactor, job string) (*slog.Logger, error) {
	var lv slog.Level
	switch strings.ToLower(level) {
	case "debug":
		lv = slog.LevelDebug
	case "", "info":
		lv = slog.LevelInfo
	case "warn", "warning":
		lv = slog.LevelWarn
	case "error":
		lv = slog.LevelError
	default:
		return nil, fmt.Errorf("--log-level %q must be debug, info, warn or error", level)
	}
	if quiet && lv < slog.LevelWarn {
		lv = slog.LevelWarn
	}
	opts := &slog.HandlerOptions{Level: lv}
	var h slog.Handler
	switch strings.ToLower(format) {
	case "", "text":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, fmt.Errorf("--log-format %q must be text or json", format)
	}
	var out slog.Handler = &redactHandler{next: h, red: red}
	if job != "" {
		out = &traceHandler{next: out, trace: &trace{job: job}}
	}
	return slog.New(out), nil
}

// traceHandler puts the job and the run id on every line that lacks them,
// so that an operator can follow one run, and one page through its
// retries, with a single filter. The engine logs its own lines with both;
// the fetcher, the sink and the state file log through loggers built before
// the run had an id. The run id is learned when the engine derives its
// run's logger (Engine.Run: Logger.With("job", …, "run_id", …)); lines that
// name a run_id of their own (an abandoned run) keep it.
type traceHandler struct {
	next  slog.Handler
	trace *trace
	has   map[string]bool // keys already added through WithAttrs
}

// trace is what every handler derived from one logger shares.
type trace struct {
	job   string
	runID atomic.Int64
}

func (h *traceHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *traceHandler) Handle(ctx context.Context, r slog.Record) error {
	hasJob, hasRun := h.has["job"], h.has["run_id"]
	r.Attrs(func(a slog.Attr) bool {
		hasJob = hasJob || a.Key == "job"
		hasRun = hasRun || a.Key == "run_id"
		return !(hasJob && hasRun)
	})
	if !hasJob || !hasRun {
		r = r.Clone()
	}
	if !hasJob {
		r.AddAttrs(slog.String("job", h.trace.job))
	}
	if id := h.trace.runID.Load(); !hasRun && id != 0 {
		r.AddAttrs(slog.Int64("run_id", id))
	}
	return h.next.Handle(ctx, r)
}

func (h *traceHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	has := make(map[string]bool, len(h.has)+len(attrs))
	for k := range h.has {
		has[k] = true
	}
	for _, a := range attrs {
		has[a.Key] = true
		if a.Key == "run_id" {
			if v := a.Value.Resolve(); v.Kind() == slog.KindInt64 {
				h.trace.runID.Store(v.Int64())
			}
		}
	}
	return &traceHandler{next: h.next.WithAttrs(attrs), trace: h.trace, has: has}
}

func (h *traceHandler) WithGroup(name string) slog.Handler {
	return &traceHandler{next: h.next.WithGroup(name), trace: h.trace, has: h.has}
}

// redactHandler redacts secrets from messages and string values.
type redactHandler struct {
	next slog.Handler
	red  *idsync.Redactor
}

func (h *redactHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *redactHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.red.Redact(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *redactHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.red.Redact(v.String()))
	case slog.KindGroup:
		attrs := v.Group()
		out := make([]any, len(attrs))
		for i, g := range attrs {
			out[i] = h.attr(g)
		}
		return slog.Group(a.Key, out...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, h.red.Redact(err.Error()))
		}
		return slog.String(a.Key, h.red.Redact(fmt.Sprint(v.Any())))
	}
	return slog.Attr{Key: a.Key, Value: v}
}

func (h *redactHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = h.attr(a)
	}
	return &redactHandler{next: h.next.WithAttrs(red), red: h.red}
}

func (h *redactHandler) WithGroup(name string) slog.Handler {
	return &redactHandler{next: h.next.WithGroup(name), red: h.red}
}
