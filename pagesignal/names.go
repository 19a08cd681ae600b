package pagesignal

import "strings"

// Norm lowercases a key and drops everything but letters and digits, so
// that next_cursor, nextCursor and Next-Cursor are one name.
func Norm(k string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(k) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// In returns a matcher of normalised keys that accepts names.
func In(names ...string) func(string) bool {
	return func(n string) bool {
		for _, want := range names {
			if n == Norm(want) {
				return true
			}
		}
		return false
	}
}

// IsNext matches the names of a next position: next, next_cursor,
// nextPageToken, next_id, nextRecordsUrl, @odata.nextLink, NextMarker …,
// not a flag (has_next, isNext) nor Google's nextSyncToken, which only
// the last page carries.
func IsNext(n string) bool {
	return strings.Contains(n, "next") && !strings.HasPrefix(n, "has") && !strings.HasPrefix(n, "is") && !strings.Contains(n, "sync")
}

// IsToken matches the names under which APIs hand out a continuation
// token without the word next: cursor, after, starting_after, endCursor,
// continuation, pageToken, marker, bookmark, scroll_id, continue, and
// offset or start when they hold text (Airtable's offset).
var IsToken = In("cursor", "after", "startingafter", "endcursor", "continuation", "continuationtoken", "pagetoken",
	"marker", "bookmark", "scrollid", "continue", "offset", "start", "skiptoken")

// HasMore matches the flags that are true while the list goes on.
var HasMore = In("hasmore", "hasnext", "hasnextpage", "more", "moreresults", "moreavailable",
	"hasmoreitems", "hasmorepages", "hasmoreresults", "morepages", "truncated", "istruncated")

// Done matches the flags that are false while the list goes on.
var Done = In("done", "islast", "islastpage", "last", "lastpage", "complete", "finished", "end", "endofresults")

// Total matches the names of a total count of records.
var Total = In("total", "totalcount", "totalresults", "totalrecords", "totalitems", "totalelements",
	"totalsize", "totalentries", "totalhits", "numfound", "count", "recordcount", "resultcount")

// PageCount matches the names of a number of pages.
var PageCount = In("totalpages", "pagecount", "pages", "numpages", "lastpage", "pagestotal")

// SizeParams are the query parameters that ask for a page size, as
// written; a parameter matches when its normalised name is one of theirs
// (page[size] is pagesize, $top is top).
var SizeParams = []string{"limit", "per_page", "perPage", "page_size", "pageSize", "page[size]", "size",
	"count", "maxResults", "max_results", "$top", "top", "rows", "take", "page[limit]", "pagelimit", "results"}
