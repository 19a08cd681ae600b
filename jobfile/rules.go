package jobfile

import (
	"fmt"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile/spec"
	"github.com/idemsync/idemsync/sink/targets"
	idsync "github.com/idemsync/idemsync/sync"
	"github.com/idemsync/idemsync/sync/paging"
)

// Rule is everything idemsync says of one key of the job file, in one
// place: what it means, its default and the values it accepts. The loader
// fills Default into an unset key when Fill is set, and refuses a value
// outside Enum, Min..Max or Pattern (Check); the JSON Schema (package
// schema) is generated from the same rules, so the editor and the loader
// cannot disagree. Defaults that depend on other keys (a style's param,
// retry.max_wait, the command auth's header) are filled by the loader's
// code and only shown here.
type Rule struct {
	Doc      string   // the description editors show on hover; docs/job-file.md is the long form
	Default  any      // the default as the user would write it ("30s", "64MiB", 5, true)
	Fill     bool     // the loader sets Default when the key is unset
	Examples []any    // shown by editors
	Enum     []string // the accepted values, when they are a fixed list
	Min, Max *float64 // the accepted range of a number
	Pattern  string   // a regular expression a string value must match
	Say      string   // how the loader words a value Pattern refuses: "%q <Say>"
}

// Rules returns the rule of every key of the job file by its dotted path
// ("source.timeout"; "target.columns.*.type" for a column's type; "" for
// the file itself). The map is a copy. A key of spec.Spec without a rule
// makes the schema generator panic (and its test fail), so a new key cannot
// ship undocumented.
func Rules() map[string]Rule {
	out := make(map[string]Rule, len(rules))
	for k, r := range rules {
		out[k] = r
	}
	return out
}

var rules = map[string]Rule{
	"": {Doc: "An idemsync job: copy a paginated HTTP/JSON API into a SQL table. " +
		"Strings may use ${VAR} and ${VAR:-default}; unknown keys are errors. Reference: docs/job-file.md."},
	"name": {Pattern: `^[A-Za-z0-9_-]+$`, Say: "may only contain letters, digits, _ and -", Doc: "Required. The job's name ([A-Za-z0-9_-]+); it keys all of the job's state in the state file.",
		Examples: []any{"orders"}},
	"state": {Fill: true, Doc: "State file (SQLite) holding checkpoints, runs and dead letters, relative to the job file's folder; " +
		"or a postgres:// URL (?schema=, ?lease=) to keep the state in PostgreSQL, shared by several hosts under a lease. " +
		"--state and $IDEMSYNC_STATE take precedence.", Default: idsync.DefaultStateFile},
	"retention": {Fill: true, Doc: "How long runs and their page rows are kept in the state file: after every run, older ones are pruned " +
		"(never the latest run, the latest completed run, an unfinished run or dead letters).", Default: "30d"},

	"decide": {Doc: "Decisions idemsync init left open (what it saw, and the question it could not answer). " +
		"validate and run refuse the file while the list has an entry: make each decision in the file, then delete its entry."},

	"source":         {Doc: "Required. Where and how pages are requested."},
	"source.url":     {Pattern: `^[Hh][Tt][Tt][Pp][Ss]?://[^/?#]`, Say: "must be an http or https URL", Doc: "Required. URL of the first page (http or https).", Examples: []any{"https://api.example.com/v1/orders"}},
	"source.method":  {Fill: true, Pattern: "^([Gg][Ee][Tt]|[Pp][Oo][Ss][Tt])$", Say: "must be GET or POST", Doc: "GET or POST.", Default: "GET"},
	"source.headers": {Doc: "Headers sent with every request. The values of credential headers (Authorization, X-Api-Key, Cookie ...) and their ${VAR}s are secrets: never logged, never stored; no header is sent to another origin."},
	"source.query":   {Doc: "Fixed query parameters added to every request (a next URL keeps its own values). A list repeats the key: expand[]: [a, b]."},
	"source.body": {Doc: "Request body; only with method: POST. A mapping is sent as JSON, a string as it is; sent as application/json unless headers set a Content-Type. " +
		"With method: POST, error_path defaults to errors."},
	"source.records": {Doc: "GJSON path of the records array in the body. Omit when the body itself is the array; null means an empty page.",
		Examples: []any{"data", "data.items"}},
	"source.timeout":     {Fill: true, Doc: "Timeout of one request attempt.", Default: idsync.DefaultTimeout.String()},
	"source.rate_limit":  {Min: num(0), Doc: "Most requests per second, retries included. 0 or omitted: no limit."},
	"source.concurrency": {Fill: true, Min: num(1), Max: num(64), Doc: "Pages requested at once (page and offset styles only; 1 to 64). Pages are still committed in order.", Default: 1},
	"source.max_body":    {Fill: true, Doc: "Largest response body accepted (bytes, or with a unit: 512KiB, 10MB, 64MiB); a larger one is a permanent error.", Default: sizeText(idsync.DefaultMaxBody)},
	"source.error_path": {Doc: "GJSON path that, present and not empty/false/null in a 2xx body, marks the page as failed (retried as transient; a GraphQL request error fails at once). " +
		"Defaults to errors with method: POST; \"\" turns the check off. See docs/job-file.md#error-payloads-in-a-2xx-body.",
		Examples: []any{"error"}},
	"source.insecure_skip_tls_verify": {Doc: "Turn TLS certificate verification off for this job. A warning is logged on every run.", Default: false},
	"source.follow_origins":           {Doc: "Other origins (scheme://host[:port]) a next link, next URL or redirect may lead to; followed without the job's credentials. Any other origin is refused.", Examples: []any{[]any{"https://api.github.com"}}},
	"source.auth":                     {Doc: "How requests to the source's origin are authenticated (never sent to another origin). See docs/job-file.md#auth."},
	"source.auth.type":                {Enum: idsync.AuthTypes, Doc: strings.Join(idsync.AuthTypes, " | ") + "."},
	"source.auth.token":               {Doc: "bearer: the token (a secret), sent as Authorization: Bearer <token>."},
	"source.auth.username":            {Doc: "basic: the user name."},
	"source.auth.password":            {Doc: "basic: the password (a secret)."},
	"source.auth.name":                {Doc: "api_key: the header or query parameter name.", Examples: []any{"X-Api-Key", "api_key"}},
	"source.auth.value":               {Doc: "api_key: the key (a secret)."},
	"source.auth.in":                  {Enum: []string{"header", "query"}, Doc: "api_key: header or query.", Default: "header"},
	"source.auth.token_url":           {Doc: "oauth2_*: the token endpoint; it receives the client credentials."},
	"source.auth.client_id":           {Doc: "oauth2_*: the client id."},
	"source.auth.client_secret":       {Doc: "oauth2_*: the client secret (a secret)."},
	"source.auth.scopes":              {Doc: "oauth2_*: scopes requested."},
	"source.auth.auth_style":          {Enum: []string{"header", "body"}, Doc: "oauth2_*: how the client authenticates to token_url: header (HTTP Basic) or body (form fields). Omitted: tried in turn."},
	"source.auth.refresh_token":       {Doc: "oauth2_refresh_token: the seed refresh token (a secret). A rotated token is kept in the state file; a changed seed wins."},
	"source.auth.run":                 {Doc: "command: program and arguments run without a shell; its standard output (trimmed) is the token.", Examples: []any{[]any{"vault", "read", "-field=token", "secret/api"}}},
	"source.auth.header":              {Doc: "command: header receiving the token.", Default: "Authorization"},
	"source.auth.prefix":              {Doc: "command: text put before the token.", Default: "Bearer "},
	"source.auth.ttl":                 {Doc: "command: how long the token is reused before the command runs again (it also runs again on a 401).", Default: idsync.DefaultAuthCommandTTL.String()},

	"pagination":       {Doc: "How to walk the pages. See docs/pagination.md."},
	"pagination.style": {Fill: true, Enum: styleNames(), Doc: strings.Join(styleNames(), " | ") + ".", Default: paging.StyleNone},
	"pagination.has_more": {Doc: "GJSON path of a boolean: false ends pagination; true forbids ending on an empty page.",
		Examples: []any{"has_more", "meta.has_more"}},
	"pagination.param": {Doc: "Query parameter carrying the position. page: defaults to page; offset: offset; cursor: cursor; hwm: required (receives the mark). Not used with link and none."},
	"pagination.start": {Doc: "page style: number of the first page.", Default: 1},
	"pagination.size_param": {Doc: "Query parameter carrying the page size; required when size is set (offset style: defaults to limit).",
		Examples: []any{"per_page", "limit"}},
	"pagination.size": {Doc: "Records per page, sent in size_param. Required with offset. With page, offset and hwm, a shorter page ends pagination."},
	"pagination.in": {Doc: "Where the position goes: query (a query parameter), header (a request header) or body (a JSON path in source.body, e.g. variables.after). " +
		"page, offset, hwm and cursor with next or next_header. size_param stays a query parameter.", Default: "query", Enum: []string{"query", "header", "body"}},
	"pagination.template": {Doc: "How the position's value is written: {value}; with offset also {offset}, {limit} and {end} (offset+limit-1, inclusive).",
		Examples: []any{"gt.{value}", "items={offset}-{end}"}},
	"pagination.total": {Doc: "Where the API tells the total number of records: a GJSON body path, or header:NAME (e.g. header:X-Total-Count). " +
		"A page that would end the run before that many records is a contradiction: retried, then exit 3.",
		Examples: []any{"meta.total", "header:X-Total-Count"}},
	"pagination.total_pages": {Doc: "page style: GJSON path of the total number of pages; the run ends after that page, and the progress bar shows a total.",
		Examples: []any{"meta.total_pages"}},
	"pagination.next": {Doc: "cursor style: GJSON path of the next cursor in the body; missing, null, false or empty ends pagination.",
		Examples: []any{"next_cursor", "meta.next"}},
	"pagination.next_header": {Doc: "cursor style: response header holding the next cursor; absent or empty ends pagination.",
		Examples: []any{"X-Next-Cursor"}},
	"pagination.next_url": {Doc: "cursor style: GJSON path of the next page's full URL in the body (relative URLs resolve against the request).",
		Examples: []any{"links.next", "paging.next"}},
	"pagination.field": {Doc: "hwm style: GJSON path of the mark (RFC 3339 timestamp or number) in each record. Required with hwm.",
		Examples: []any{"updated_at"}},
	"pagination.initial": {Doc: "hwm style: mark of the very first run (RFC 3339 timestamp or number). Omitted: the first request sends no mark.",
		Examples: []any{"2024-01-01T00:00:00Z"}},
	"pagination.overlap": {Doc: "hwm style: subtracted from the saved mark when a new run starts: a duration for timestamp marks; for numeric marks a decimal number, " +
		"or a duration (seconds; milliseconds for integer marks of 13 digits or more). A number with an initial timestamp is refused.",
		Examples: []any{"1m", "10m"}},
	"pagination.max_future": {Doc: "hwm style: a record whose mark lies more than this after the run's start is synced but never moves the saved mark (counted in a warning).",
		Default: "1h", Examples: []any{"1h", "1d"}},
	"pagination.one_page": {Doc: "none: the one page is the whole list even though it carries a sign of more (a has-more flag that is true, done: false, a next link or cursor, as many records as a size parameter asked for). " +
		"Without it such a page fails the run (exit 1). See docs/guarantees.md.", Default: false},
	"pagination.continue": {Doc: "page, offset, cursor, link: after a completed run, start the next run from the last committed page instead of the first (append-only feeds).", Default: false},

	"incremental": {Doc: "A since-window sent on every request of a run (page, offset, cursor, link and none styles). See docs/pagination.md."},
	"incremental.field": {Doc: "Required. GJSON path of the record's change mark (RFC 3339 timestamp or number).",
		Examples: []any{"updated_at"}},
	"incremental.param": {Doc: "Required. Query parameter receiving the run's mark.", Examples: []any{"updated_since", "since"}},
	"incremental.end_param": {Doc: "Query parameter receiving the run's upper bound (the time the run started, in the form of the run's mark, else of initial, else of format) on every request: " +
		"records changed while the run goes on are left to the next run instead of being read half-way. A first run without initial under format: as_received sends none.", Examples: []any{"updated_before", "until"}},
	"incremental.step": {Doc: "Split the run's window [mark − overlap, run start) into windows of this length, fixed when the run starts and walked one after another, " +
		"each from the first page and checkpointed like any page (several at once with concurrency); the saved mark moves to the end of each completed window. Needs end_param.", Min: num(0), Examples: []any{"1d", "6h"}},
	"incremental.concurrency": {Doc: "Windows walked at once (with step; any pagination style, cursor included). Each window keeps its own place in the run's checkpoint; " +
		"the saved mark moves only over the windows completed without a gap.", Default: 1, Fill: true, Min: num(1), Max: num(64)},
	"incremental.initial": {Doc: "Mark of the very first run. Omitted: the first run sends no mark (full sync).",
		Examples: []any{"2024-01-01T00:00:00Z"}},
	"incremental.overlap": {Doc: "Subtracted from the saved mark when a new run starts: a duration for timestamp marks; for numeric marks a decimal number, " +
		"or a duration (seconds; milliseconds for integer marks of 13 digits or more). A number where initial or format says the marks are timestamps is refused.",
		Examples: []any{"10m"}},
	"incremental.format": {Fill: true, Doc: "How marks are sent: as_received (verbatim, in the form the API wrote them; before any was received, the form of initial), rfc3339 (UTC, whole seconds), date (UTC), unix, unix_ms, or a Go time layout.",
		Default: "as_received", Examples: []any{"as_received", "unix", "2006-01-02 15:04:05"}},
	"incremental.max_future": {Fill: true, Doc: "A record whose mark lies more than this after the run's start is synced but never moves the saved mark (counted in a warning).",
		Default: "1h", Examples: []any{"1h", "1d"}},
	"incremental.full_every": {Doc: "Make a run a full pass (no lower bound: from initial when set, else sending no mark; from the first page) when the last completed full pass started more than this long ago, or none completed yet. " +
		"A full pass catches rows an incremental run misses (records deleted upstream, rows missed by shifting pages) and is when target.deletes sweeps. Omitted: only run --full does.",
		Min: num(0), Examples: []any{"24h", "7d"}},

	"retry":          {Doc: "Retries of transient failures: network errors, timeouts, invalid or truncated JSON, error_path payloads, and on_status."},
	"retry.attempts": {Fill: true, Min: num(1), Doc: "Tries per request, the first included.", Default: idsync.DefaultAttempts},
	"retry.min_wait": {Fill: true, Doc: "Shortest wait before a retry.", Default: idsync.DefaultMinWait.String()},
	"retry.max_wait": {Doc: "Longest wait before a retry: caps the exponential backoff (full jitter) and Retry-After. Defaults to 30s or min_wait, whichever is larger.",
		Default: idsync.DefaultMaxWait.String()},
	"retry.on_status":   {Fill: true, Doc: "HTTP statuses that are retried; any other non-2xx status fails at once.", Default: idsync.DefaultRetryStatus},
	"retry.on_status[]": {Doc: "An HTTP status.", Min: num(100), Max: num(599)},

	"target":     {Doc: "Required. Where records are written."},
	"target.url": {Pattern: targets.URLPattern(), Say: "names no database idemsync knows", Doc: "Required. sqlite:PATH (relative to the job file's folder) or postgres://user:pass@host:5432/db?sslmode=verify-full.", Examples: []any{"sqlite:out/orders.db"}},
	"target.table": {Doc: "Required. Table name; PostgreSQL may say schema.table.",
		Examples: []any{"orders"}},
	"target.key": {Doc: "Required. The column or columns that identify a record (a single name or a list). With columns, each must be one of them.",
		Examples: []any{[]any{"id"}}},
	"target.columns":        {Doc: "Column name → GJSON path, or {path, type}. Omitted: one column per top-level field, types inferred, new fields add columns."},
	"target.columns.*.path": {Doc: "GJSON path of the value in each record. Defaults to the column name."},
	"defaults":              {Doc: "In a file with resources: job keys deep-merged under every resource (the resource's own keys win; lists are replaced)."},
	"resources": {Doc: "Several endpoints in one file, run in file order (parents before children); each has a name and any job key but name, state and retention. " +
		"Reference: docs/job-file.md, \"Several resources in one file\"."},
	"source.base_url": {Doc: "Joined with source.path (one /) in place of source.url; usually set in defaults."},
	"source.path":     {Doc: "Joined to source.base_url in place of source.url; may use {parent.COL} in a child."},
	"target.columns.*.parent": {Doc: "In a child resource (parent:): the parent table's column whose value the column takes, instead of a path; " +
		"its type defaults to the parent column's."},
	"target.columns.*.type": {Default: string(contract.TypeText), Enum: columnTypes(), Doc: strings.Join(columnTypes(), " | ") + "."},
	"target.create":         {Fill: true, Doc: "Create the table and its unique key when missing.", Default: true},
	"target.on_bad_record": {Fill: true, Enum: []string{"fail", "skip"}, Doc: "fail: a bad record fails its page. skip: it goes to the dead letters and the rest of the page is written.",
		Default: idsync.DefaultOnBadRecord},
	"target.version": {Doc: "Column (one of columns, when columns are given) holding a version; a row is only overwritten by a record whose version is >= the stored one.",
		Examples: []any{"updated_at"}},
	"target.timeout": {Doc: "Bounds on the target database's waits (PostgreSQL: lock_timeout and statement_timeout of the session). A statement that passes one fails the page as a transient error (exit 3); the checkpoint stays at the last committed page."},
	"target.timeout.lock": {Doc: "Longest wait for a lock held by another session (LOCK TABLE, ALTER TABLE, VACUUM FULL). At least 1ms.",
		Default: contract.DefaultLockTimeout.String()},
	"target.timeout.statement": {Doc: "Longest run of one statement, its lock waits included. At least 1ms.",
		Default: contract.DefaultStatementTimeout.String()},
	"target.deletes": {Fill: true, Enum: []string{contract.DeletesKeep, contract.DeletesSoft, contract.DeletesHard}, Default: contract.DeletesKeep,
		Doc: "What happens to rows whose key two consecutive completed full passes did not see (the first leaves them pending): keep them; soft: set their _idemsync_deleted_at (cleared when the key comes back); hard: delete them. " +
			"Partial, failed, windowed and replay runs never delete. See docs/deletions.md."},
	"target.max_delete_ratio": {Fill: true, Default: idsync.DefaultMaxDeleteRatio, Min: num(0), Max: num(1),
		Doc: "A sweep that would remove more than this share of the live rows the table held before the pass changes nothing and fails its run (exit 1); run --allow-mass-delete lets one run pass."},
	"target.tombstone":       {Doc: "A record whose field holds value is deleted (deletes: hard) or marked (soft) in its page's own write, on any run. Needs deletes: soft or hard."},
	"target.tombstone.field": {Doc: "Required. GJSON path of the flag in each record.", Examples: []any{"deleted", "meta.is_deleted"}},
	"target.tombstone.value": {Doc: "Required. The value that flags a deleted record: a boolean, a number or a string, compared with the field's JSON value.",
		Examples: []any{true, "deleted"}},
	"target.changes": {Doc: "Record an event for every row a run inserts, updates or deletes (unchanged rows record none) in the target database, in the rows' own transaction, numbered in commit order; read them with idemsync changes. See docs/changes.md."},
	"target.schema": {Doc: "What a page may change of a table whose columns are inferred (no columns): new columns and column types. " +
		"A record the contract refuses or trims goes to the dead letters with the reason. See docs/job-file.md#the-schema-contract."},
	"target.schema.new_columns": {Fill: true, Default: spec.NewColumnsEvolve, Enum: []string{spec.NewColumnsEvolve, spec.NewColumnsFreeze, spec.NewColumnsDiscard},
		Doc: "A field the table has no column for. evolve: add the column. freeze: fail the page (exit 1), naming the field and record. " +
			"discard: store the record without the field, with a dead letter saying so."},
	"target.schema.type_change": {Fill: true, Default: spec.TypeChangeWiden, Enum: []string{spec.TypeChangeWiden, spec.TypeChangeFreeze, spec.TypeChangeDiscardValue, spec.TypeChangeDiscardRow},
		Doc: "A value its inferred column cannot take. widen: widen the column along integer → numeric → text → json. freeze: fail the page (exit 1). " +
			"discard_value: store NULL in its place, with a dead letter. discard_row: dead-letter the record."},
	"target.changes_rows": {Doc: "With changes: each insert and update event carries the row's mapped columns as a JSON object. Needs changes: true."},
	"target.mode": {Doc: "SQLite targets only: permission of the target file (and its -wal and -shm files) when idemsync creates it, " +
		"an octal string letting the owner read and write. An existing file keeps its mode.", Default: "0600", Examples: []any{"0640"}},

	"target.children": {Doc: "Child tables from nested arrays: name → {path, table, key, columns, children}. Each element of the array at path becomes a row of table, " +
		"keyed by the parent's key columns (named <parent table>_<column>) plus key (or _idemsync_pos, the element's position, without key); " +
		"a parent's child rows are replaced in the parent's own write when the parent changed, deleted or marked with it. See docs/job-file.md, \"Child tables\"."},
	"target.children.*.path":     {Doc: "Required. GJSON path of the array in the parent's record (or element)."},
	"target.children.*.table":    {Doc: "Required. The child table's name (in the parent's schema)."},
	"target.children.*.key":      {Doc: "The element's columns that identify it within its parent's array. Omitted: its position (_idemsync_pos)."},
	"target.children.*.columns":  {Doc: "Required. The element's columns, as target.columns, paths relative to the element (@this for an array of scalars)."},
	"target.children.*.children": {Doc: "Child tables of the element's own nested arrays, as target.children."},
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

// styleNames are the pagination styles, in the order of sync's style table.
func styleNames() []string {
	var out []string
	for _, r := range paging.StyleRules() {
		out = append(out, r.Name)
	}
	return out
}

// columnTypes are the target column types.
func columnTypes() []string {
	out := make([]string, len(contract.ColumnTypes))
	for i, t := range contract.ColumnTypes {
		out[i] = string(t)
	}
	return out
}

func num(f float64) *float64 { return &f }
