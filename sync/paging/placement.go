package paging

import (
	"regexp"

	"github.com/idemsync/idemsync/jobfile/spec"
)

// Where pagination.in puts the position.
const (
	InQuery  = "query"
	InHeader = "header"
	InBody   = "body"
)

// placeholders are the names a pagination.template may use, and the style
// they need ("" for any).
var placeholders = map[string]string{"value": "", "offset": StyleOffset, "limit": StyleOffset, "end": StyleOffset}

var placeholderRE = regexp.MustCompile(`\{([^{}]*)\}`)

// checkPlacement checks pagination.in and pagination.template against the
// style: a next URL is a whole URL and takes neither; a template names
// only known placeholders, those of offset only with offset, and at least
// one of them.
func checkPlacement(pg *spec.Pagination, bad BadFunc) {
	if pg.NextURL != "" {
		if pg.In != "" && pg.In != InQuery {
			bad("pagination.in", "is not used with next_url (the next page is a whole URL)")
		}
		if pg.Template != "" {
			bad("pagination.template", "is not used with next_url (the next page is a whole URL)")
		}
		return
	}
	if pg.In == InHeader || pg.In == InBody {
		if pg.Param == "" {
			bad("pagination.param", "is required with in: %s (the %s that carries the position)", pg.In, map[string]string{InHeader: "header", InBody: "JSON path in source.body"}[pg.In])
		}
	}
	if pg.Template == "" {
		return
	}
	found := placeholderRE.FindAllStringSubmatch(pg.Template, -1)
	if len(found) == 0 {
		bad("pagination.template", "%q has no placeholder: write {value} where the position goes", pg.Template)
	}
	for _, m := range found {
		style, ok := placeholders[m[1]]
		switch {
		case !ok:
			bad("pagination.template", "{%s} is not a placeholder: use {value}, or with offset {offset}, {limit}, {end}", m[1])
		case style != "" && pg.Style != style:
			bad("pagination.template", "{%s} is only used with style %s", m[1], style)
		}
	}
}
