package paging

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"

	"github.com/idemsync/idemsync/jobfile/spec"
)

// Style is one pagination style: everything idemsync does
// differently for it. Each style is one type in its own file
// (style_page.go, style_offset.go, ...), listed once in styleTable.
type Style interface {
	// Traits are the style's fixed properties.
	Traits() Traits
	// fill fills the pagination block's defaults for the style and reports
	// through bad the keys it lacks or does not use.
	fill(pg *spec.Pagination, bad BadFunc)
	// Start is the style's position of a new run's first page; mark is
	// the hwm style's starting mark.
	Start(pg spec.Pagination, mark string) At
	// Request sets the style's query parameters for the page at pos on q.
	// It returns the URL the position holds (a next URL), "" to request
	// source.url.
	Request(pg spec.Pagination, pos At, q url.Values) string
	// Step is the position after a fetched page and what the style alone
	// says about the end (see pager.step).
	Step(in StepIn) (StepOut, error)
	// describe returns pos as a person reads it, without " (end)". Like
	// every method here it reads a position of another style, or nil, as
	// its own zero position.
	describe(pos At, r Redacter) string
	// parse reads a user-given position (replay --from/--to).
	parse(v string) (At, error)
	// lastBefore reports whether the page at pos, followed by next, is the
	// last one a replay bounded by to re-reads.
	lastBefore(pos, next, to At) bool
	// decode reads the style's position from its stored form (the JSON of
	// its type; empty for the zero position).
	decode(b json.RawMessage) (At, error)
	// legacy reads the style's position from a format 1 position's fields
	// (position_legacy.go), and whether it sets any of the style's own
	// (status without the job file takes the first style that holds one).
	legacy(l legacyAt) (At, bool)
}

// Numbered is a style whose pages are addressed by number (page,
// offset): the position k pages ahead is known before fetching, so pages
// are fetched concurrently, and the records up to a page are counted.
type Numbered interface {
	Style
	// ahead is the position k pages of size records after pos.
	Ahead(pos At, k int64, size int) At
	// seenThrough is how many records the walk holds up to and including
	// a page of n records at pos (false when the style cannot tell).
	SeenThrough(pg spec.Pagination, pos At, size, n int) (int64, bool)
}

// Traits are the fixed properties of a pagination style.
type Traits struct {
	name string
	// keepsMark: the style keeps its own mark (hwm): incremental is not
	// used with it, and it has pagination.max_future.
	KeepsMark bool
	// ordered: positions compare, so replay --to can come before --from.
	Ordered bool
	// pageNumbers: pages are numbered by one size (page): a page after a
	// short one cannot skip what it lacked, a page-size cap is only taken
	// from the first page, and a replay's --to counts its pages.
	PageNumbers bool
	// trustsEnd: the style's end is a missing next cursor, URL or link, not
	// a short page: a full first page that ends the walk earns a warning
	// (unprovenFullEnd).
	TrustsEnd bool
	// ownsLink: a Link rel="next" header is the style's own signal, not
	// evidence of more pages.
	OwnsLink bool
	// uses are the optional pagination keys the style reads; the loader
	// rejects the others of pagingKeys when set.
	uses []string
	// The JSON Schema's rules, as the style's fill checks them: required
	// keys, one-of keys, and whether pagination.size needs size_param.
	required       []string
	oneOf          []string
	sizeNeedsParam bool
}

// styleTable is the one table of pagination styles, in the order errors
// and the JSON Schema list them.
var styleTable = []Style{pagePaging{}, OffsetPaging{}, cursorPaging{}, linkPaging{}, hwmPaging{}, nonePaging{}}

// Of returns the named style; an unknown name (a spec the loader
// rejects) gets none.
func Of(name string) Style {
	for _, s := range styleTable {
		if s.Traits().name == name {
			return s
		}
	}
	return nonePaging{}
}

// Known reports whether name is a pagination style.
func Known(name string) bool {
	for _, s := range styleTable {
		if s.Traits().name == name {
			return true
		}
	}
	return false
}

// StyleRule is what the JSON Schema says of one pagination style.
type StyleRule struct {
	Name           string   // the value of pagination.style
	Required       []string // keys of pagination the style requires
	OneOf          []string // keys of which the style requires exactly one
	SizeNeedsParam bool     // pagination.size requires pagination.size_param
}

// StyleRules returns every pagination style with its schema rules, in the
// order the documentation lists them. It never fails.
func StyleRules() []StyleRule {
	out := make([]StyleRule, 0, len(styleTable))
	for _, s := range styleTable {
		t := s.Traits()
		out = append(out, StyleRule{Name: t.name, Required: t.required, OneOf: t.oneOf, SizeNeedsParam: t.sizeNeedsParam})
	}
	return out
}

// styleNames returns the names of the styles with a trait, in table order.
func styleNames(with func(Style) bool) []string {
	var out []string
	for _, s := range styleTable {
		if with(s) {
			out = append(out, s.Traits().name)
		}
	}
	return out
}

// concurrentStyles is how the loader names the styles that fetch pages
// concurrently: "page and offset".
func concurrentStyles() string {
	return strings.Join(styleNames(func(s Style) bool { _, ok := s.(Numbered); return ok }), " and ")
}

// pagingKey is a pagination key that only some styles use, and whether
// the spec sets it.
type pagingKey struct {
	name string
	set  bool
}

// pagingKeys are the pagination keys that only some styles use.
func pagingKeys(pg *spec.Pagination) []pagingKey {
	return []pagingKey{
		{"param", pg.Param != ""}, {"start", pg.Start != nil}, {"total_pages", pg.TotalPages != ""},
		{"total", pg.Total != ""}, {"continue", pg.Continue}, {"next", pg.Next != ""},
		{"next_header", pg.NextHeader != ""}, {"next_url", pg.NextURL != ""}, {"field", pg.Field != ""},
		{"initial", pg.Initial != ""}, {"overlap", pg.Overlap != ""},
		{"in", pg.In != "" && pg.In != InQuery}, {"template", pg.Template != ""}, {"one_page", pg.OnePage},
	}
}

// rejectUnused reports each key of pagingKeys the spec sets but the style
// does not use (fill only sets defaults of keys its style uses).
func rejectUnused(pg *spec.Pagination, bad BadFunc) {
	t := Of(pg.Style).Traits()
	for _, k := range pagingKeys(pg) {
		if k.set && !slices.Contains(t.uses, k.name) {
			bad("pagination."+k.name, "is not used with style %s", t.name)
		}
	}
}

// sizeNeedsParam reports a pagination.size without pagination.size_param.
func sizeNeedsParam(pg *spec.Pagination, bad BadFunc) {
	if pg.Size > 0 && pg.SizeParam == "" {
		bad("pagination.size_param", "is required when pagination.size is set")
	}
}

// setParam sets pagination.param to def when it is unset.
func setParam(pg *spec.Pagination, def string) {
	if pg.Param == "" {
		pg.Param = def
	}
}
