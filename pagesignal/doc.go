// Package pagesignal is the one reading of the signs a page of a list
// gives that the list goes on: a next cursor, token, id or URL under any
// common spelling, a has-more or done flag, totals and page counts,
// wherever they sit in the body (top level, meta, paging, pagination,
// links, _links, response_metadata, …), and a page holding as many
// records as a size parameter of its URL asked for.
//
// `idemsync init` proposes a style from these signs (package initgen) and
// the engine refuses to complete a style none job whose one page shows
// one (docs/guarantees.md, "A list that says it has more"). Like infer/,
// it imports nothing of the project's own.
package pagesignal
