package jobfile

import (
	"maps"
	"slices"

	idsync "github.com/idemsync/idemsync/sync"

	"net/http"
	"net/url"
	"strings"
)

// sourceDefaults fills and checks the source block: URL, method, body,
// headers (kept as secrets), auth, timeout, body limit, concurrency and
// rate limit.
func (j loading) sourceDefaults(bad func(key, format string, args ...any)) {
	s := &j.Source
	if s.URL == "" {
		bad("source.url", "is required")
	} else if err := idsync.ValidURL(s.URL); err != nil {
		bad("source.url", "%v", err)
	} else if u, _ := url.Parse(s.URL); u.User != nil {
		if pw, ok := u.User.Password(); ok {
			j.Secrets.Add(pw)
		}
	}
	s.Method = strings.ToUpper(s.Method)
	switch s.Method {
	case "":
		s.Method = http.MethodGet
	case http.MethodGet, http.MethodPost:
	default:
		bad("source.method", "%q must be GET or POST", s.Method)
	}
	if s.Body != "" && s.Method != http.MethodPost {
		bad("source.body", "is only allowed with method: POST")
	}
	for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
		j.Secrets.Add(s.Headers[k])
	}
	j.authDefaults(bad)
	if s.Timeout.Duration == 0 {
		s.Timeout.Duration = idsync.DefaultTimeout
	}
	if s.MaxBody == 0 {
		s.MaxBody = idsync.DefaultMaxBody
	}
	if s.Concurrency == 0 {
		s.Concurrency = 1
	}
	if s.Concurrency < 0 || s.Concurrency > 64 {
		bad("source.concurrency", "%d must be between 1 and 64", s.Concurrency)
	}
	if s.RateLimit < 0 {
		bad("source.rate_limit", "must not be negative")
	}
}

// incrementalDefaults fills and checks the incremental block, when there
// is one.
func (j loading) incrementalDefaults(bad func(key, format string, args ...any)) {
	if inc := j.Incremental; inc != nil {
		if st := j.Pagination.Style; idsync.StyleKeepsMark(st) {
			bad("incremental", "is not used with style %s (%s keeps its own mark)", st, st)
		}
		if inc.Field == "" {
			bad("incremental.field", "is required")
		}
		if inc.Param == "" {
			bad("incremental.param", "is required")
		}
		if err := idsync.CheckOverlap(inc.Overlap); err != nil {
			bad("incremental.overlap", "%v", err)
		}
		if inc.Initial != "" {
			if _, err := idsync.CheckMark(inc.Initial); err != nil {
				bad("incremental.initial", "%v", err)
			}
		}
		if inc.Format == "" {
			inc.Format = idsync.FormatAsReceived
		}
		if err := idsync.CheckMarkFormat(inc.Format); err != nil {
			bad("incremental.format", "%v", err)
		}
		if inc.MaxFuture.Duration == 0 {
			inc.MaxFuture.Duration = idsync.DefaultMaxFuture
		}
	}
}

// retryDefaults fills and checks the retry block.
func (j loading) retryDefaults(bad func(key, format string, args ...any)) {
	r := &j.Retry
	if r.Attempts == 0 {
		r.Attempts = idsync.DefaultAttempts
	}
	if r.Attempts < 1 {
		bad("retry.attempts", "must be at least 1")
	}
	if r.MinWait.Duration == 0 {
		r.MinWait.Duration = idsync.DefaultMinWait
	}
	if r.MaxWait.Duration == 0 {
		r.MaxWait.Duration = max(idsync.DefaultMaxWait, r.MinWait.Duration)
	}
	if r.MaxWait.Duration < r.MinWait.Duration {
		bad("retry.max_wait", "must not be less than retry.min_wait")
	}
	if r.OnStatus == nil {
		r.OnStatus = append([]int(nil), idsync.DefaultRetryStatus...)
	}
	for _, c := range r.OnStatus {
		if c < 100 || c > 599 {
			bad("retry.on_status", "%d is not an HTTP status", c)
		}
	}
}
