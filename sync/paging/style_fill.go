package paging

import (
	"strings"

	"github.com/idemsync/idemsync/jobfile/spec"
)

// BadFunc reports one problem of a job spec: the dotted key it concerns
// and what is wrong with it. The loader (package jobfile) passes one to the
// checks the domain owns.
type BadFunc = func(key, format string, args ...any)

// FillPagination fills the pagination block's defaults for its style (none
// when unset) and reports, through bad, what the style cannot use: an
// unknown style, keys the style does not read, and concurrency > 1 with a
// style whose next page depends on the previous one.
func FillPagination(pg *spec.Pagination, concurrency int, bad BadFunc) {
	if pg.Style == "" {
		pg.Style = StyleNone
	}
	if Known(pg.Style) {
		Of(pg.Style).fill(pg, bad)
		rejectUnused(pg, bad)
	} else {
		bad("pagination.style", "%q is not one of %s", pg.Style, strings.Join(styleNames(func(Style) bool { return true }), ", "))
	}
	if !Of(pg.Style).Traits().KeepsMark && pg.MaxFuture.Duration != 0 {
		bad("pagination.max_future", "is not used with style %s (incremental.max_future is)", pg.Style)
	}
	if h, ok := strings.CutPrefix(pg.Total, "header:"); ok && strings.TrimSpace(h) == "" {
		bad("pagination.total", "header: needs a header name, e.g. header:X-Total-Count")
	}
	checkPlacement(pg, bad)
	if _, numbered := Of(pg.Style).(Numbered); concurrency > 1 && !numbered {
		bad("source.concurrency", "only %s styles fetch pages concurrently", concurrentStyles())
	}
}

// StyleKeepsMark reports whether the named style keeps its own mark (hwm),
// so that an incremental block does not apply to it.
func StyleKeepsMark(style string) bool { return Of(style).Traits().KeepsMark }
