package httpsource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	idsync "github.com/idemsync/idemsync/sync"
)

// ParseRetryAfter reads a Retry-After header: delay seconds or an HTTP date
// (relative to now). A date in the past gives 0, true; garbage gives false.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := parseUint(v); err == nil {
		if n > 1<<31 {
			n = 1 << 31
		}
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d, true
		}
		return 0, true
	}
	return 0, false
}

func parseUint(s string) (int64, error) {
	if s == "" || len(s) > 12 {
		return 0, errors.New("not a number")
	}
	var n int64
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, errors.New("not a number")
		}
		n = n*10 + int64(r-'0')
	}
	return n, nil
}

// retryLogger routes go-retryablehttp's log lines to the job's slog logger
// (never the standard library's log package). Its messages repeat what the
// fetcher reports itself (a warning per retry, the final error), so they all
// go out at debug level; every value is redacted with the job's secrets,
// since the library hides URL passwords but not ${VAR} values in a query.
type retryLogger struct {
	log *slog.Logger
	red *idsync.Redactor
}

var _ retryablehttp.LeveledLogger = retryLogger{}

func (l retryLogger) Error(msg string, kv ...any) { l.debug(msg, kv) }
func (l retryLogger) Warn(msg string, kv ...any)  { l.debug(msg, kv) }
func (l retryLogger) Info(msg string, kv ...any)  { l.debug(msg, kv) }
func (l retryLogger) Debug(msg string, kv ...any) { l.debug(msg, kv) }

func (l retryLogger) debug(msg string, kv []any) {
	if l.log == nil || !l.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	attrs := make([]any, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		attrs = append(attrs, slog.String(fmt.Sprint(kv[i]), l.red.Redact(fmt.Sprint(kv[i+1]))))
	}
	l.log.Debug("http client: "+l.red.Redact(msg), attrs...)
}
