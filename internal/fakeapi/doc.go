// Package fakeapi is a deterministic, thread-safe, in-memory HTTP/JSON API that
// serves one data set of customer orders in every pagination style idemsync
// supports (docs/pagination.md), with optional latency, fault injection and
// live mutation. It exists for integration tests and for the example program in
// examples/api; nothing in the product imports it.
//
// An *API is an http.Handler, so tests serve it with
// httptest.NewServer(fakeapi.New(fakeapi.Options{})); programs can use Start
// or Serve instead.
//
// # Routes
//
// Every list route answers GET and POST (the request body is ignored but
// recorded, see LastBody), honours updated_since=RFC3339 (only records with
// updated_at >= that instant) and takes a page size through per_page (page
// and link styles) or limit (the others), which defaults to
// Options.PageSize. Invalid parameters get 400 with {"error":{"message":...}}.
//
//	GET /page?page=N&per_page=M      {"data":[...],"meta":{"page":N,"per_page":M,"total":T,"total_pages":P,"has_more":bool}}
//	GET /offset?offset=O&limit=L     {"data":[...],"total":T}
//	GET /cursor?cursor=C&limit=L     {"data":[...],"next_cursor":"..."|null}
//	GET /cursor-url?cursor=C&limit=L {"data":[...],"links":{"next":"http://HOST/cursor-url?..."|null}}
//	GET /cursor-header?cursor=C&limit=L   [...] with header X-Next-Cursor (absent at the end)
//	GET /link?page=N&per_page=M[&relative=1]  [...] with an RFC 8288 Link header
//	GET /hwm?since=S&limit=L         {"data":[...]} ordered by (updated_at, id), updated_at >= S
//	GET /all                         [...] every record
//	GET /redirect?to=URL[&status=302]  a redirect to URL (never faulted)
//
// The page, offset, cursor, link and all routes order records by id. Pages
// start at 1; a page or offset past the end returns an empty list. Cursors
// are opaque (base64url of the last id seen) and stay valid while records are
// added, updated or deleted. Links and next URLs are absolute, built from the
// request's Host, and keep every other query parameter of the request.
//
// # Faults
//
// Options.Faults (or SetFaults) makes list requests fail at random, with a
// deterministic sequence for a given Faults.Seed; see Faults and FaultKinds.
// A fault replaces the response of one request and never changes the data.
//
// # Mutation
//
// Tests mutate the data set directly (Update, Add, Delete) or through
// MutateEvery, which runs a function after every n-th successful list
// response, so a sync can be made to race with changes deterministically.
//
// # Two levels
//
// A *Shop (NewShop) is a second API, of parents each with its own paginated
// children, for fan-out tests: orders and their items (ShapeShop) or
// repositories and their issues (ShapeGitHub), some parents without
// children and some with several pages, children that change between runs,
// a parent whose children answer 404, latency, faults and request counts
// per path.
package fakeapi
