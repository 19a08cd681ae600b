package sync

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sync/paging"
)

// Window is the incremental window of a run: the mark every request sends
// in incremental.param (From, "" when none) and the upper bound it sends
// in incremental.end_param (To, "" when none).
//
// Parent, for a child resource (fan-out: docs/job-file.md, "Parent → child
// fan-out"), is the parent row whose children the window walks: a JSON object
// of the parent's columns (their values as text, or null); "" otherwise.
type Window struct{ From, To, Parent string }

// request returns the request for the page at pos in the run's window
// win. The position goes where
// pagination.in says, written by pagination.template; the page size and
// the incremental mark are always query parameters.
func (p *pager) request(pos paging.Position, win Window) (contract.Request, error) {
	pg := p.job.Pagination
	params := url.Values{}
	if inc := p.job.Incremental; inc != nil {
		for _, b := range []struct {
			param, mark string
			end         bool
		}{{inc.Param, win.From, false}, {inc.EndParam, win.To, true}} {
			if b.param == "" || b.mark == "" {
				continue
			}
			format := paging.FormatMark // the lower bound rounds down
			if b.end {
				format = paging.FormatEnd // the upper bound up
			}
			w, err := format(b.mark, inc.Format)
			if err != nil {
				return contract.Request{}, err
			}
			params.Set(b.param, w)
		}
	}
	size := p.size(pos)
	if size > 0 && pg.SizeParam != "" {
		params.Set(pg.SizeParam, strconv.Itoa(size)) // the size the API serves, once a cap was seen
	}
	var err error
	if pos.At, err = p.unseal(pos.At); err != nil {
		return contract.Request{}, err
	}
	pp := url.Values{}
	next := p.style().Request(pg, pos.At, pp)
	req := contract.Request{}
	for k, vs := range pp {
		if k == pg.Param && len(vs) == 1 {
			p.place(&req, params, vs[0], pos, size)
		} else {
			params[k] = vs
		}
	}
	base := p.job.Source.URL
	if win.Parent != "" {
		var err error
		if base, err = p.parentRequest(&req, params, win.Parent); err != nil {
			return contract.Request{}, err
		}
	}
	if next != "" {
		req.URL, err = p.src.BuildURL(next, params, true)
	} else {
		req.URL, err = p.src.BuildURL(base, params, false)
	}
	return req, err
}

// place puts the position's value v where pagination.in says, written by
// pagination.template. In a JSON body, a page number or offset written
// without a template is a number, a cursor the API gave as a JSON list or
// object is that JSON (not one it gave as a string: CursorAt.Text);
// anything else is a string.
func (p *pager) place(req *contract.Request, params url.Values, v string, pos paging.Position, size int) {
	pg := p.job.Pagination
	written := v
	if pg.Template != "" {
		end := ""
		if size > 0 {
			end = strconv.FormatInt(paging.OffsetOf(pos.At).Offset+int64(size)-1, 10)
		}
		written = strings.NewReplacer("{value}", v, "{offset}", v, "{limit}", strconv.Itoa(size), "{end}", end).Replace(pg.Template)
	}
	switch pg.In {
	case paging.InHeader:
		req.Header = map[string]string{pg.Param: written}
	case paging.InBody:
		var val any = written
		if _, numbered := p.style().(paging.Numbered); numbered && pg.Template == "" {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				val = n
			}
		} else if c, _ := pos.At.(paging.CursorAt); pg.Template == "" && !c.Text && (strings.HasPrefix(v, "[") || strings.HasPrefix(v, "{")) && json.Valid([]byte(v)) {
			val = json.RawMessage(v) // a cursor that is JSON (search_after's sort values) goes in as JSON
		}
		req.Body = []contract.BodyValue{{Path: pg.Param, Value: val}}
	default:
		params.Set(pg.Param, written)
	}
}

// runWindow is the window of a run started at started whose mark is from:
// with incremental.end_param, the upper bound is the run's start rounded up
// to whole seconds (a record stamped earlier in the second the run started
// belongs to this run), written in the form of the marks (a Unix time for
// numeric ones, unix_ms for 13 digits and more). The mark the run saves
// stays at or before its start (incrementalSavedMark, savedEnd), so what
// changes in that last second is read again by the next run.
//
// The form of the marks is from's, else initial's, else the one
// incremental.format writes (unix, unix_ms: a number; the others a
// timestamp). A run with none of them (a first run without initial, format
// as_received) cannot tell timestamps from numbers before it reads a
// record: it has no upper bound, rather than one the API may read as
// another number (docs/job-file.md, "incremental").
func runWindow(job *Job, from string, started time.Time) Window {
	inc := job.Incremental
	if inc == nil {
		return Window{}
	}
	w := Window{From: from}
	if inc.EndParam == "" || started.IsZero() {
		return w
	}
	t := started.UTC().Truncate(time.Second)
	if t.Before(started) {
		t = t.Add(time.Second)
	}
	sample := from
	if sample == "" {
		sample = inc.Initial
	}
	if sample == "" {
		switch inc.Format {
		case "", paging.FormatAsReceived:
			return w
		case paging.FormatUnix:
			sample = "0"
		case paging.FormatUnixMS:
			sample = "0000000000000"
		}
	}
	w.To = markLike(t, sample)
	return w
}

// markLike writes t in the form of the mark sample: a Unix time in seconds,
// or in milliseconds for 13 digits and more, when sample is a number;
// otherwise an RFC 3339 timestamp like sample (formatLike).
func markLike(t time.Time, sample string) string {
	if n := strings.TrimSpace(sample); n != "" && strings.Trim(n, "0123456789") == "" {
		if len(n) >= 13 {
			return strconv.FormatInt(t.UnixMilli(), 10)
		}
		return strconv.FormatInt(t.Unix(), 10)
	}
	return paging.FormatLike(t, sample)
}

// markTime reads a mark as a time: an RFC 3339 timestamp, or a Unix time
// in seconds (milliseconds for 13 digits and more).
func markTime(m string) (time.Time, bool) {
	m = strings.TrimSpace(m)
	if m != "" && strings.Trim(m, "0123456789") == "" {
		n, err := strconv.ParseInt(m, 10, 64)
		if err != nil {
			return time.Time{}, false
		}
		if len(m) >= 13 {
			return time.UnixMilli(n).UTC(), true
		}
		return time.Unix(n, 0).UTC(), true
	}
	return paging.ParseTime(m)
}

// runWindows splits the run's window (runWindow) into windows of
// incremental.step: [from, from+step), [from+step, from+2·step), … up to
// the run's start, the bounds written in the form of the marks. A run
// without step, without a lower bound (a first run without initial) or
// whose bounds are not times has the one window.
func runWindows(job *Job, from string, started time.Time) []Window {
	w := runWindow(job, from, started)
	inc := job.Incremental
	if inc == nil || inc.Step.Duration <= 0 || w.From == "" || w.To == "" {
		return []Window{w}
	}
	lo, ok1 := markTime(w.From)
	hi, ok2 := markTime(w.To)
	if !ok1 || !ok2 || !lo.Before(hi) {
		return []Window{w}
	}
	var out []Window
	for t := lo; t.Before(hi); t = t.Add(inc.Step.Duration) {
		end := t.Add(inc.Step.Duration)
		if end.After(hi) {
			end = hi
		}
		out = append(out, Window{From: markLike(t, w.From), To: markLike(end, w.From)})
	}
	out[0].From, out[len(out)-1].To = w.From, w.To // the mark as the API wrote it
	return out
}
