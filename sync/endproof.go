package sync

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sync/paging"
)

// A run may end only on positive evidence of the end of pagination
// (docs/guarantees.md, "Exit 0 means complete"; docs/pagination.md, "How a run
// knows it reached the end"): the style's own end signal, and no other
// configured or observed signal (has_more, total_pages, total, a Link
// rel="next" header) saying there is more. decideEnd weighs them for one
// fetched page.

// endResult is the end decision for one fetched page.
type endResult struct {
	// next is the position after the page; End is set when the page is
	// the last.
	next paging.Position
	// ahead is the response at next when proving the end fetched it.
	ahead *contract.Response
	// capped > 0: the API was found to serve at most this many records
	// per page, fewer than pagination.size.
	capped int
	// contra, when set, is a contradiction ("page 4 is empty but
	// meta.total_pages says 10 pages"): the page is no end and no step
	// forward; it must be fetched again (a transient fault).
	contra string
	// weak, when set, says why the end, though taken, proves too little
	// for a sweep (weakEnd).
	weak string
	// total is pagination.total as the decision read it, nil where it did
	// not (a page whose end was probed): the commit's checks reuse it
	// rather than scan the body for it again.
	total *pageTotal
}

// pageTotal is pagination.total read from one response: the count, the
// header or path it came from, and whether the response had one.
type pageTotal struct {
	n    int64
	name string
	ok   bool
}

// prober fetches the page at pos, to tell whether a short page was the
// last one; it returns the response and the highest mark of its records.
type prober func(pos paging.Position) (*contract.Response, string, error)

// decideEnd decides whether the page fetched at pos is the last one, where
// pagination goes next, or why the page contradicts itself. hwmMax is the
// highest mark of its records; to is a replay's --to bound (nil when
// none); probe fetches the next position when a short page must be proven
// to be the end (at most once per page).
func (p *pager) decideEnd(pos paging.Position, resp *contract.Response, hwmMax string, to *paging.Position, probe prober) (endResult, error) {
	style := p.job.Pagination.Style
	out, err := p.step(pos, resp, hwmMax)
	if err != nil {
		return endResult{}, err
	}
	next, own, why := paging.Position{At: out.Next}, out.Own, out.Why
	if own == paging.CappedTie {
		return p.uncap(pos, resp, probe)
	}
	tot := pageTotal{}
	tot.n, tot.name, tot.ok = p.total(resp)
	more, last, err := p.signals(pos, resp, tot)
	if err != nil {
		return endResult{}, err
	}
	where := pos.Describe(style, p.job.Secrets)
	end := endResult{next: pos, total: &tot}
	end.next.End = true
	switch own {
	case paging.StyleEnd:
		if len(more) > 0 {
			return endResult{contra: where + " " + why + " but " + more[0]}, nil
		}
		end.weak = p.weakEnd(pos, resp, last, where)
		if p.unprovenFullEnd(pos, resp, last) {
			p.log.Warn("the first page is full and ends the walk: if the API has more records, its end signal (or the job's pagination setting that reads it) is wrong",
				"page", where, "records", resp.Raw, "size", p.job.Pagination.Size, "why", why)
		}
		return end, nil
	case paging.ShortEnd:
		// A short first page is always proven: an API that caps its pages
		// may also compute total_pages from the size asked.
		if !p.firstPage(pos) && len(more) == 0 && (len(last) > 0 || to != nil && paging.LastBefore(style, pos, next, *to)) {
			return end, nil
		}
		return p.prove(pos, resp, hwmMax, next, why, more, probe)
	}
	if len(last) > 0 {
		if len(more) > 0 {
			return endResult{contra: where + ": " + last[0] + " but " + more[0]}, nil
		}
		return end, nil
	}
	return endResult{next: next, total: &tot}, nil
}

// prove fetches the position after a short page (page, offset, hwm styles)
// to tell its end from a page-size cap: nothing there (no records, or for
// hwm no record past the page's mark) proves the end unless a signal says
// more; records there mean the walk goes on (as many as on the short page:
// the API caps its pages at that size, and the walk goes on with it). For
// page style a next page holding more records than the short one means
// the short page came back incomplete: a contradiction, as page numbers
// cannot skip it.
func (p *pager) prove(pos paging.Position, resp *contract.Response, hwmMax string, next paging.Position, why string, more []string, probe prober) (endResult, error) {
	style := p.job.Pagination.Style
	where := pos.Describe(style, p.job.Secrets)
	if p.firstPage(pos) {
		// Asked at the size the first page served, the next page holds the
		// records that follow it however the API numbers its pages.
		next = next.Serving(resp.Raw)
	}
	pr, prMax, err := probe(next)
	if err != nil {
		return endResult{}, err
	}
	n, m := resp.Raw, pr.Raw
	if m == 0 || p.style().Traits().KeepsMark && paging.CompareMarks(prMax, hwmMax) <= 0 && m < p.size(pos) {
		if len(more) > 0 {
			return endResult{contra: where + " " + why + " but " + more[0]}, nil
		}
		end := endResult{next: pos}
		end.next.End = true
		return end, nil
	}
	if p.style().Traits().PageNumbers && (m > n || !p.firstPage(pos)) {
		// Pages are numbered by one size: a page after a short one that
		// holds anything means the short page came back incomplete (or
		// records arrived meanwhile). Going on would skip what it lacked.
		but := ""
		if len(more) > 0 {
			but = more[0] + " and "
		}
		return endResult{contra: fmt.Sprintf("%s %s but %s%s has %d records", where, why, but, next.Describe(style, p.job.Secrets), m)}, nil
	}
	// The walk goes on from next, which the probe already fetched. Only a
	// next page of exactly n records is taken for a cap of n (and the walk
	// goes on in pages of n): fewer may be the true last page, or records
	// that arrived meanwhile. Either way the next page is checked in turn.
	res := endResult{next: next, ahead: pr}
	if m == n {
		// A page style cap is only taken from the walk's first page (see
		// above): an API may number its pages by the size it serves or by
		// the size asked, and only with every later page asked at the size
		// served are the records the same under both.
		res.next, res.capped = res.next.Serving(n), n
	}
	return res, nil
}

// unprovenFullEnd reports whether a cursor or link walk ends on a full page
// with nothing to vouch for its end signal: the page is the walk's first
// (no earlier page showed the signal present, so a wrong pagination.next
// looks the same) and no count or flag (pagination.total) confirms it. A full last page after
// pages that carried a next cursor, URL or link is an ordinary end: a
// total that is a multiple of the page size. docs/pagination.md, "How a
// run knows it reached the end".
func (p *pager) unprovenFullEnd(pos paging.Position, resp *contract.Response, last []string) bool {
	size := p.job.Pagination.Size
	if !p.style().Traits().TrustsEnd || size <= 0 || resp.Raw < size || len(last) > 0 {
		return false
	}
	switch a := pos.At.(type) {
	case paging.CursorAt:
		if a.Cursor != "" || a.URL != "" {
			return false
		}
	case paging.LinkAt:
		if a.URL != "" {
			return false
		}
	}
	// On the first page, pagination.total counts what the walk holds.
	t, _, ok := p.total(resp)
	return !ok || t > int64(resp.Raw)
}

// weakEnd says why an empty page that ends a page or offset walk after a
// full page, with no count or flag confirming it (last is empty), is weak
// proof for a sweep: a page lost for a moment (an error served as an empty
// list) looks the same. "" when the end is proven: a short page, a
// confirming signal, another style's own end signal, or an empty first
// page (an empty list, which max_delete_ratio weighs as a mass change).
// docs/deletions.md, "What proves absence".
func (p *pager) weakEnd(pos paging.Position, resp *contract.Response, last []string, where string) string {
	if resp.Raw > 0 || len(last) > 0 {
		return ""
	}
	if _, numbered := p.style().(paging.Numbered); !numbered {
		return ""
	}
	pg := p.job.Pagination
	if paging.SameSpot(pos.At, p.style().Start(pg, "")) {
		return ""
	}
	return fmt.Sprintf("the walk ended on an empty page (%s) after a full one, and nothing confirms the end (set pagination.total, has_more or total_pages)", where)
}

// firstPage reports whether pos is the first page of a page-style walk
// still asked at pagination.size.
func (p *pager) firstPage(pos paging.Position) bool {
	pg := p.job.Pagination
	return p.style().Traits().PageNumbers && paging.PageOf(pos.At) == paging.PageAt{Page: *pg.Start}
}

// signals reads the signals of a response other than the style's own:
// descriptions of those saying more records follow this page, and of those
// saying it is the last. tot is the response's pagination.total.
func (p *pager) signals(pos paging.Position, resp *contract.Response, tot pageTotal) (more, last []string, err error) {
	pg := p.job.Pagination
	if pg.HasMore != "" {
		if v := gjson.GetBytes(resp.Body, pg.HasMore); v.Exists() && v.Type != gjson.Null {
			b, ok := moreFlag(v)
			switch {
			case !ok:
				return nil, nil, notFlag(pg.HasMore, v, p.job.Secrets)
			case b:
				more = append(more, pg.HasMore+" is true")
			default:
				last = append(last, pg.HasMore+" is false")
			}
		}
	}
	if p.style().Traits().PageNumbers && pg.TotalPages != "" {
		if v := gjson.GetBytes(resp.Body, pg.TotalPages); v.Type == gjson.Number {
			s := fmt.Sprintf("%s says %d pages", pg.TotalPages, v.Int())
			switch page, lastPage := paging.PageOf(pos.At).Page, v.Int()+*pg.Start-1; {
			case page > lastPage && resp.Raw > 0:
				// A page past the count that holds records proves the
				// count wrong (an API that says 0 when it does not count,
				// a count gone stale): it proves no end either.
			case page < lastPage:
				more = append(more, s)
			case page == lastPage && resp.Raw == 0:
				// The last page of total_pages holds at least one record.
				more = append(more, s)
			default:
				last = append(last, s)
			}
		}
	}
	if t, name := tot.n, tot.name; tot.ok {
		if seen, ok := p.seenThrough(pos, resp); ok {
			s := fmt.Sprintf("%s says %d records (%d up to this page)", name, t, seen)
			switch {
			case resp.Raw > 0 && seen-int64(resp.Raw) >= t:
				// The pages before already held the count, and this one
				// holds more: the count is wrong (0 from an API that does
				// not count, or stale), and proves no end.
			case seen < t:
				more = append(more, s)
			default:
				last = append(last, s)
			}
		}
	}
	if !p.style().Traits().OwnsLink && paging.NextLink(resp.Header.Values("Link")) != "" {
		more = append(more, `the response has a Link rel="next" header`)
	}
	return more, last, nil
}

// total reads pagination.total from a response: the total number of
// records, and the header or path it came from.
func (p *pager) total(resp *contract.Response) (int64, string, bool) {
	t := p.job.Pagination.Total
	if t == "" {
		return 0, "", false
	}
	if h, ok := strings.CutPrefix(t, "header:"); ok {
		name := strings.TrimSpace(h)
		v := resp.Header.Get(name)
		if i := strings.LastIndexByte(v, '/'); i >= 0 {
			v = v[i+1:] // Content-Range: items 0-24/3573 ("*": unknown)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		return n, name, err == nil && n >= 0
	}
	v := gjson.GetBytes(resp.Body, t)
	if v.Type == gjson.String {
		n, err := strconv.ParseInt(strings.TrimSpace(v.Str), 10, 64)
		return n, t, err == nil && n >= 0
	}
	return v.Int(), t, v.Type == gjson.Number && v.Int() >= 0
}

// seenThrough is how many records the walk holds up to and including the
// page at pos, when the style's positions tell it (page style with a
// known size, offset style).
func (p *pager) seenThrough(pos paging.Position, resp *contract.Response) (int64, bool) {
	if s, ok := p.style().(paging.Numbered); ok {
		return s.SeenThrough(p.job.Pagination, pos.At, p.size(pos), resp.Raw)
	}
	return 0, false
}

// totalPagesFromTotal estimates the number of pages from pagination.total
// and pagination.size, for the progress bar (0 when either is unknown).
func totalPagesFromTotal(job *Job, resp *contract.Response) int64 {
	size := int64(job.Pagination.Size)
	if size <= 0 || resp == nil {
		return 0
	}
	t, _, ok := (&pager{job: job}).total(resp)
	if !ok {
		return 0
	}
	return (t + size - 1) / size
}

// uncap answers a full hwm page that made no progress under a page-size cap
// taken from a short page: the cap may have been records that arrived while
// the short page was proven, and ties on the mark then fill the small page.
// The page is asked again at pagination.size: more records than the cap
// mean there was none, and the walk goes on at full size from that
// response; no more mean the ties outnumber a real cap (an error).
func (p *pager) uncap(pos paging.Position, resp *contract.Response, probe prober) (endResult, error) {
	full := paging.Position{At: pos.Serving(0).At}
	pr, _, err := probe(full)
	if err != nil {
		return endResult{}, err
	}
	if pr.Raw > pos.Size() {
		return endResult{next: full, ahead: pr}, nil
	}
	return endResult{}, &contract.Error{Class: contract.Permanent,
		Msg: fmt.Sprintf("a full page of %d records made no progress past %s, and the API serves at most %d per page",
			resp.Raw, full.Describe(p.job.Pagination.Style, p.job.Secrets), pos.Size()),
		Hint: "more records share one mark than the API serves in a page: no walk by this mark can pass them"}
}

// moreFlag reads a has_more value as a boolean: true or false, the numbers 1
// and 0, or those four as a string (any case). ok is false for anything
// else: an object or a list (a path that stops short of the flag) or a
// word such as "yes", which must not read as false and end a walk.
func moreFlag(v gjson.Result) (b, ok bool) {
	switch v.Type {
	case gjson.True:
		return true, true
	case gjson.False:
		return false, true
	case gjson.Number:
		return v.Raw == "1", v.Raw == "1" || v.Raw == "0"
	case gjson.String:
		switch strings.ToLower(v.Str) {
		case "true", "1":
			return true, true
		case "false", "0":
			return false, true
		}
	}
	return false, false
}

// notFlag is the error of a has_more value moreFlag cannot read: it names the
// path, what the value is and its first bytes (secrets redacted).
func notFlag(path string, v gjson.Result, red *Redactor) error {
	kind := map[gjson.Type]string{gjson.String: "a string", gjson.Number: "a number"}[v.Type]
	switch {
	case v.IsObject():
		kind = "an object"
	case v.IsArray():
		kind = "a list"
	}
	raw := []rune(red.Redact(v.Raw))
	if len(raw) > 60 {
		raw = append(raw[:60], '…')
	}
	return &contract.Error{Class: contract.Permanent,
		Msg:  fmt.Sprintf("pagination.has_more (%s) is %s, not a boolean: %s", path, kind, string(raw)),
		Hint: "point has_more at a true/false flag of the body (such as pageInfo.hasNextPage); nothing of this page was committed"}
}
