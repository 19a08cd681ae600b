package cmd

import (
	"log/slog"
	"strings"
)

// jsonLogs reports whether --log-format json asked that everything on
// stderr be a JSON line (docs/operations.md, Logs).
func (g *globalOpts) jsonLogs() bool { return strings.EqualFold(g.logFormat, "json") }

// writeErrorLog writes a command's error (and hint) on stderr as one JSON
// line, like the log lines before it: with --log-format json, a log file
// that takes both streams (the cron recipe's 2>&1) stays JSON lines.
func writeErrorLog(ios *IOStreams, g *globalOpts, msg, hint string, code int) {
	attrs := []any{"exit_code", code}
	if hint != "" {
		attrs = append(attrs, "hint", hint)
	}
	if g.jobName != "" {
		attrs = append(attrs, "job", g.jobName)
	}
	slog.New(slog.NewJSONHandler(ios.ErrOut, nil)).Error(msg, attrs...)
}
