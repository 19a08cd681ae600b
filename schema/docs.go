package schema

import (
	"strings"

	"fmt"

	idsync "github.com/idemsync/idemsync/sync"
)

// doc is the description, default and examples of one key, as editors show
// them on hover. docs/job-file.md is the long form.
type doc struct {
	text     string
	def      any
	examples []any
}

// docs describes every key of the job file by its dotted path. A key of
// idsync.Spec without an entry here makes Job panic (and its test fail), so
// a new key cannot ship undocumented; a test also rejects entries for keys
// that no longer exist.
var docs = map[string]doc{
	"": {text: "An idemsync job: copy a paginated HTTP/JSON API into a SQL table. " +
		"Strings may use ${VAR} and ${VAR:-default}; unknown keys are errors. Reference: docs/job-file.md."},
	"name": {text: "Required. The job's name ([A-Za-z0-9_-]+); it keys all of the job's state in the state file.",
		examples: []any{"orders"}},
	"state": {text: "State file (SQLite) holding checkpoints, runs and dead letters; relative to the job file's folder. " +
		"--state and $IDEMSYNC_STATE take precedence.", def: idsync.DefaultStateFile},
	"retention": {text: "How long runs and their page rows are kept in the state file: after every run, older ones are pruned " +
		"(never the latest run, the latest completed run, an unfinished run or dead letters).", def: "30d"},

	"source":         {text: "Required. Where and how pages are requested."},
	"source.url":     {text: "Required. URL of the first page (http or https).", examples: []any{"https://api.example.com/v1/orders"}},
	"source.method":  {text: "GET or POST.", def: "GET"},
	"source.headers": {text: "Headers sent with every request. Their values are secrets: never logged, never stored, never sent to another origin on a redirect."},
	"source.query":   {text: "Fixed query parameters added to every request (a next URL keeps its own values)."},
	"source.body":    {text: "Request body; only with method: POST. Sent as application/json unless headers set a Content-Type."},
	"source.records": {text: "GJSON path of the records array in the body. Omit when the body itself is the array; null means an empty page.",
		examples: []any{"data", "data.items"}},
	"source.timeout":     {text: "Timeout of one request attempt.", def: idsync.DefaultTimeout.String()},
	"source.rate_limit":  {text: "Most requests per second, retries included. 0 or omitted: no limit."},
	"source.concurrency": {text: "Pages requested at once (page and offset styles only; 1 to 64). Pages are still committed in order.", def: 1},
	"source.max_body":    {text: "Largest response body accepted (bytes, or with a unit: 512KiB, 10MB, 64MiB); a larger one is a permanent error.", def: sizeText(idsync.DefaultMaxBody)},
	"source.error_path": {text: "GJSON path that, present and not empty/false/null in a 2xx body, marks the page as failed (retried as transient).",
		examples: []any{"error"}},
	"source.insecure_skip_tls_verify": {text: "Turn TLS certificate verification off for this job. A warning is logged on every run.", def: false},
	"source.auth":                     {text: "How requests to the source's origin are authenticated (never sent to another origin). See docs/job-file.md#auth."},
	"source.auth.type":                {text: "bearer | basic | api_key | oauth2_client_credentials | oauth2_refresh_token | command."},
	"source.auth.token":               {text: "bearer: the token (a secret), sent as Authorization: Bearer <token>."},
	"source.auth.username":            {text: "basic: the user name."},
	"source.auth.password":            {text: "basic: the password (a secret)."},
	"source.auth.name":                {text: "api_key: the header or query parameter name.", examples: []any{"X-Api-Key", "api_key"}},
	"source.auth.value":               {text: "api_key: the key (a secret)."},
	"source.auth.in":                  {text: "api_key: header or query.", def: "header"},
	"source.auth.token_url":           {text: "oauth2_*: the token endpoint; it receives the client credentials."},
	"source.auth.client_id":           {text: "oauth2_*: the client id."},
	"source.auth.client_secret":       {text: "oauth2_*: the client secret (a secret)."},
	"source.auth.scopes":              {text: "oauth2_*: scopes requested."},
	"source.auth.auth_style":          {text: "oauth2_*: how the client authenticates to token_url: header (HTTP Basic) or body (form fields). Omitted: tried in turn."},
	"source.auth.refresh_token":       {text: "oauth2_refresh_token: the seed refresh token (a secret). A rotated token is kept in the state file; a changed seed wins."},
	"source.auth.run":                 {text: "command: program and arguments run without a shell; its standard output (trimmed) is the token.", examples: []any{[]any{"vault", "read", "-field=token", "secret/api"}}},
	"source.auth.header":              {text: "command: header receiving the token.", def: "Authorization"},
	"source.auth.prefix":              {text: "command: text put before the token.", def: "Bearer "},
	"source.auth.ttl":                 {text: "command: how long the token is reused before the command runs again (it also runs again on a 401).", def: idsync.DefaultAuthCommandTTL.String()},

	"pagination":       {text: "How to walk the pages. See docs/pagination.md."},
	"pagination.style": {text: strings.Join(styleNames(), " | ") + ".", def: idsync.StyleNone},
	"pagination.has_more": {text: "GJSON path of a boolean: false ends pagination; true forbids ending on an empty page.",
		examples: []any{"has_more", "meta.has_more"}},
	"pagination.param": {text: "Query parameter carrying the position. page: defaults to page; offset: offset; cursor: cursor; hwm: required (receives the mark). Not used with link and none."},
	"pagination.start": {text: "page style: number of the first page.", def: 1},
	"pagination.size_param": {text: "Query parameter carrying the page size; required when size is set (offset style: defaults to limit).",
		examples: []any{"per_page", "limit"}},
	"pagination.size": {text: "Records per page, sent in size_param. Required with offset. With page, offset and hwm, a shorter page ends pagination."},
	"pagination.total": {text: "Where the API tells the total number of records: a GJSON body path, or header:NAME (e.g. header:X-Total-Count). " +
		"A page that would end the run before that many records is a contradiction: retried, then exit 3.",
		examples: []any{"meta.total", "header:X-Total-Count"}},
	"pagination.total_pages": {text: "page style: GJSON path of the total number of pages; the run ends after that page, and the progress bar shows a total.",
		examples: []any{"meta.total_pages"}},
	"pagination.next": {text: "cursor style: GJSON path of the next cursor in the body; missing, null, false or empty ends pagination.",
		examples: []any{"next_cursor", "meta.next"}},
	"pagination.next_header": {text: "cursor style: response header holding the next cursor; absent or empty ends pagination.",
		examples: []any{"X-Next-Cursor"}},
	"pagination.next_url": {text: "cursor style: GJSON path of the next page's full URL in the body (relative URLs resolve against the request).",
		examples: []any{"links.next", "paging.next"}},
	"pagination.field": {text: "hwm style: GJSON path of the mark (RFC 3339 timestamp or number) in each record. Required with hwm.",
		examples: []any{"updated_at"}},
	"pagination.initial": {text: "hwm style: mark of the very first run (RFC 3339 timestamp or number). Omitted: the first request sends no mark.",
		examples: []any{"2024-01-01T00:00:00Z"}},
	"pagination.overlap": {text: "hwm style: subtracted from the saved mark when a new run starts (a duration for timestamp marks, a number for numeric marks).",
		examples: []any{"1m", "10m"}},
	"pagination.max_future": {text: "hwm style: a record whose mark lies more than this after the run's start is synced but never moves the saved mark (counted in a warning).",
		def: "1h", examples: []any{"1h", "1d"}},
	"pagination.continue": {text: "page, offset, cursor, link: after a completed run, start the next run from the last committed page instead of the first (append-only feeds).", def: false},

	"incremental": {text: "A since-window sent on every request of a run (page, offset, cursor, link and none styles). See docs/pagination.md."},
	"incremental.field": {text: "Required. GJSON path of the record's change mark (RFC 3339 timestamp or number).",
		examples: []any{"updated_at"}},
	"incremental.param": {text: "Required. Query parameter receiving the run's mark.", examples: []any{"updated_since", "since"}},
	"incremental.initial": {text: "Mark of the very first run. Omitted: the first run sends no mark (full sync).",
		examples: []any{"2024-01-01T00:00:00Z"}},
	"incremental.overlap": {text: "Subtracted from the saved mark when a new run starts (a duration for timestamp marks, a number for numeric marks).",
		examples: []any{"10m"}},
	"incremental.format": {text: "How marks are sent: as_received (verbatim, in the form the API wrote them; before any was received, the form of initial), rfc3339 (UTC, whole seconds), date (UTC), unix, unix_ms, or a Go time layout.",
		def: "as_received", examples: []any{"as_received", "unix", "2006-01-02 15:04:05"}},
	"incremental.max_future": {text: "A record whose mark lies more than this after the run's start is synced but never moves the saved mark (counted in a warning).",
		def: "1h", examples: []any{"1h", "1d"}},

	"retry":          {text: "Retries of transient failures: network errors, timeouts, invalid or truncated JSON, error_path payloads, and on_status."},
	"retry.attempts": {text: "Tries per request, the first included.", def: idsync.DefaultAttempts},
	"retry.min_wait": {text: "Shortest wait before a retry.", def: idsync.DefaultMinWait.String()},
	"retry.max_wait": {text: "Longest wait before a retry: caps the exponential backoff (full jitter) and Retry-After. Defaults to 30s or min_wait, whichever is larger.",
		def: idsync.DefaultMaxWait.String()},
	"retry.on_status": {text: "HTTP statuses that are retried; any other non-2xx status fails at once.", def: idsync.DefaultRetryStatus},

	"target":     {text: "Required. Where records are written."},
	"target.url": {text: "Required. sqlite:PATH (relative to the job file's folder) or postgres://user:pass@host:5432/db?sslmode=verify-full.", examples: []any{"sqlite:out/orders.db"}},
	"target.table": {text: "Required. Table name; PostgreSQL may say schema.table.",
		examples: []any{"orders"}},
	"target.key": {text: "Required. The column or columns that identify a record (a single name or a list). With columns, each must be one of them.",
		examples: []any{[]any{"id"}}},
	"target.columns":        {text: "Column name → GJSON path, or {path, type}. Omitted: one column per top-level field, types inferred, new fields add columns."},
	"target.columns.*.path": {text: "GJSON path of the value in each record. Defaults to the column name."},
	"target.columns.*.type": {text: "text | integer | real | numeric | boolean | timestamp | json."},
	"target.create":         {text: "Create the table and its unique key when missing.", def: true},
	"target.on_bad_record": {text: "fail: a bad record fails its page. skip: it goes to the dead letters and the rest of the page is written.",
		def: idsync.DefaultOnBadRecord},
	"target.version": {text: "Column (one of columns, when columns are given) holding a version; a row is only overwritten by a record whose version is >= the stored one.",
		examples: []any{"updated_at"}},
	"target.timeout": {text: "Bounds on the target database's waits (PostgreSQL: lock_timeout and statement_timeout of the session). A statement that passes one fails the page as a transient error (exit 3); the checkpoint stays at the last committed page."},
	"target.timeout.lock": {text: "Longest wait for a lock held by another session (LOCK TABLE, ALTER TABLE, VACUUM FULL). At least 1ms.",
		def: idsync.DefaultLockTimeout.String()},
	"target.timeout.statement": {text: "Longest run of one statement, its lock waits included. At least 1ms.",
		def: idsync.DefaultStatementTimeout.String()},
	"target.mode": {text: "SQLite targets only: permission of the target file (and its -wal and -shm files) when idemsync creates it, " +
		"an octal string letting the owner read and write. An existing file keeps its mode.", def: "0600", examples: []any{"0640"}},
}

// sizeText writes a byte size the way users write it (64MiB).
func sizeText(n int64) string {
	for _, u := range []struct {
		s string
		m int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n%u.m == 0 {
			return fmt.Sprintf("%d%s", n/u.m, u.s)
		}
	}
	return fmt.Sprint(n)
}
