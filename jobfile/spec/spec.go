package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/idemsync/idemsync/contract"
)

// Spec is a job file as written by the user (docs/job-file.md), after ${VAR}
// expansion and before defaults. Load fills defaults and validates it.
type Spec struct {
	Name        string       `yaml:"name" json:"name" jsonschema:"required"`
	State       string       `yaml:"state,omitempty" json:"state,omitempty"`
	Retention   Duration     `yaml:"retention,omitempty" json:"retention,omitempty"` // Defaults to 30d.
	Source      Source       `yaml:"source" json:"source" jsonschema:"required"`
	Pagination  Pagination   `yaml:"pagination,omitempty" json:"pagination,omitempty"`
	Incremental *Incremental `yaml:"incremental,omitempty" json:"incremental,omitempty"`
	Retry       Retry        `yaml:"retry,omitempty" json:"retry,omitempty"`
	Target      Target       `yaml:"target" json:"target" jsonschema:"required"`
	// Decide lists the decisions idemsync init left open; a job with any
	// is refused until they are made and deleted (docs/job-file.md).
	Decide []string `yaml:"decide,omitempty" json:"decide,omitempty"`
}

// Source says where and how pages are requested.
type Source struct {
	URL         string                `yaml:"url" json:"url" jsonschema:"required"`
	Method      string                `yaml:"method,omitempty" json:"method,omitempty"` // Defaults to GET.
	Headers     map[string]string     `yaml:"headers,omitempty" json:"headers,omitempty"`
	Query       map[string]QueryValue `yaml:"query,omitempty" json:"query,omitempty"`
	Body        BodyText              `yaml:"body,omitempty" json:"body,omitempty"`
	Records     string                `yaml:"records,omitempty" json:"records,omitempty"` // Defaults to the body itself.
	Timeout     Duration              `yaml:"timeout,omitempty" json:"timeout,omitempty"` // Defaults to 30s.
	RateLimit   float64               `yaml:"rate_limit,omitempty" json:"rate_limit,omitempty"`
	Concurrency int                   `yaml:"concurrency,omitempty" json:"concurrency,omitempty"` // Defaults to 1.
	MaxBody     ByteSize              `yaml:"max_body,omitempty" json:"max_body,omitempty"`       // Defaults to 64MiB.
	ErrorPath   string                `yaml:"error_path,omitempty" json:"error_path,omitempty"`
	// InsecureSkipTLSVerify turns TLS certificate verification off for this
	// job only. Named long on purpose; a warning is logged on every run.
	InsecureSkipTLSVerify bool `yaml:"insecure_skip_tls_verify,omitempty" json:"insecure_skip_tls_verify,omitempty"`
	// Auth, when set, authenticates every request to the source's origin
	// (docs/job-file.md, "Auth").
	Auth *Auth `yaml:"auth,omitempty" json:"auth,omitempty"`
	// FollowOrigins lists the other origins a next link, next URL or
	// redirect may lead to (followed without credentials); any other is
	// refused (docs/job-file.md).
	FollowOrigins []string `yaml:"follow_origins,omitempty" json:"follow_origins,omitempty"`
}

// Auth is source.auth: how requests to the source's origin are
// authenticated. Which fields apply depends on Type; every secret field is
// registered with the job's redactor.
type Auth struct {
	Type string `yaml:"type" json:"type" jsonschema:"required"`
	// bearer
	Token string `yaml:"token,omitempty" json:"token,omitempty"`
	// basic
	Username string `yaml:"username,omitempty" json:"username,omitempty"`
	Password string `yaml:"password,omitempty" json:"password,omitempty"`
	// api_key
	Name  string `yaml:"name,omitempty" json:"name,omitempty"`
	Value string `yaml:"value,omitempty" json:"value,omitempty"`
	In    string `yaml:"in,omitempty" json:"in,omitempty"` // header (default) or query
	// oauth2_client_credentials, oauth2_refresh_token
	TokenURL     string   `yaml:"token_url,omitempty" json:"token_url,omitempty"`
	ClientID     string   `yaml:"client_id,omitempty" json:"client_id,omitempty"`
	ClientSecret string   `yaml:"client_secret,omitempty" json:"client_secret,omitempty"`
	Scopes       []string `yaml:"scopes,omitempty" json:"scopes,omitempty"`
	AuthStyle    string   `yaml:"auth_style,omitempty" json:"auth_style,omitempty"` // header or body; Defaults to autodetect.
	RefreshToken string   `yaml:"refresh_token,omitempty" json:"refresh_token,omitempty"`
	// command
	Run    []string `yaml:"run,omitempty" json:"run,omitempty"`
	Header string   `yaml:"header,omitempty" json:"header,omitempty"` // Defaults to Authorization.
	Prefix *string  `yaml:"prefix,omitempty" json:"prefix,omitempty"` // Defaults to "Bearer ".
	TTL    Duration `yaml:"ttl,omitempty" json:"ttl,omitempty"`       // Defaults to 5m.
}

// Pagination selects the pagination style and its parameters.
type Pagination struct {
	Style      string `yaml:"style,omitempty" json:"style,omitempty"` // Defaults to none.
	HasMore    string `yaml:"has_more,omitempty" json:"has_more,omitempty"`
	Param      string `yaml:"param,omitempty" json:"param,omitempty"`
	Start      *int64 `yaml:"start,omitempty" json:"start,omitempty"`
	SizeParam  string `yaml:"size_param,omitempty" json:"size_param,omitempty"`
	Size       int    `yaml:"size,omitempty" json:"size,omitempty"`
	TotalPages string `yaml:"total_pages,omitempty" json:"total_pages,omitempty"`
	// Total is where the API tells the total number of records: a body
	// path, or header:NAME for a response header.
	Total string `yaml:"total,omitempty" json:"total,omitempty"`
	// In is where the position goes: query (the default), header or
	// body; Param names the query parameter, the header, or the JSON path
	// in source.body.
	In string `yaml:"in,omitempty" json:"in,omitempty"`
	// Template is how the position's value is written: {value}, and for
	// the offset style {offset}, {limit} and {end} (offset+limit-1).
	Template   string `yaml:"template,omitempty" json:"template,omitempty"`
	Next       string `yaml:"next,omitempty" json:"next,omitempty"`
	NextHeader string `yaml:"next_header,omitempty" json:"next_header,omitempty"`
	NextURL    string `yaml:"next_url,omitempty" json:"next_url,omitempty"`
	Field      string `yaml:"field,omitempty" json:"field,omitempty"`
	Initial    string `yaml:"initial,omitempty" json:"initial,omitempty"`
	Overlap    string `yaml:"overlap,omitempty" json:"overlap,omitempty"`
	Continue   bool   `yaml:"continue,omitempty" json:"continue,omitempty"`
	// OnePage (style none): the one page is the whole list even when it
	// carries a sign of more (docs/guarantees.md).
	OnePage bool `yaml:"one_page,omitempty" json:"one_page,omitempty"`
	// MaxFuture (hwm): a record whose mark lies more than this after the
	// run's start never moves the saved mark. Defaults to 1h.
	MaxFuture Duration `yaml:"max_future,omitempty" json:"max_future,omitempty"`
}

// Incremental describes a since-window sent on every request of a run.
type Incremental struct {
	Field string `yaml:"field" json:"field" jsonschema:"required"`
	Param string `yaml:"param" json:"param" jsonschema:"required"`
	// EndParam, when set, is a query parameter receiving the run's upper
	// bound (its start) on every request: records changed during the run
	// are left to the next one.
	EndParam string `yaml:"end_param,omitempty" json:"end_param,omitempty"`
	Initial  string `yaml:"initial,omitempty" json:"initial,omitempty"`
	// Step, when set, splits a run's window [mark − overlap, run start)
	// into windows of this length, walked one after another, each from
	// the style's first page (needs EndParam).
	Step Duration `yaml:"step,omitempty" json:"step,omitempty"`
	// Concurrency is how many windows are walked at once (with step).
	// Defaults to 1.
	Concurrency int    `yaml:"concurrency,omitempty" json:"concurrency,omitempty"`
	Overlap     string `yaml:"overlap,omitempty" json:"overlap,omitempty"`
	// Format is how marks are sent: as_received, rfc3339, date, unix,
	// unix_ms or a Go time layout. Defaults to as_received (the form the
	// API used; before any mark was received, the form of initial).
	Format string `yaml:"format,omitempty" json:"format,omitempty"`
	// MaxFuture: a record whose mark lies more than this after the run's
	// start never moves the saved mark. Defaults to 1h.
	MaxFuture Duration `yaml:"max_future,omitempty" json:"max_future,omitempty"`
	// FullEvery, when set, makes a run a full pass (no lower bound) when the
	// last completed full pass started more than this long ago, or never
	// completed (docs/deletions.md, "incremental.full_every and run --full").
	FullEvery Duration `yaml:"full_every,omitempty" json:"full_every,omitempty"`
}

// Retry configures retries of transient failures.
type Retry struct {
	Attempts int      `yaml:"attempts,omitempty" json:"attempts,omitempty"` // Defaults to 5.
	MinWait  Duration `yaml:"min_wait,omitempty" json:"min_wait,omitempty"` // Defaults to 1s.
	MaxWait  Duration `yaml:"max_wait,omitempty" json:"max_wait,omitempty"` // Defaults to 30s.
	OnStatus []int    `yaml:"on_status,omitempty" json:"on_status,omitempty"`
}

// Target says where records are written.
type Target struct {
	URL         string   `yaml:"url" json:"url" jsonschema:"required"`
	Table       string   `yaml:"table" json:"table" jsonschema:"required"`
	Key         []string `yaml:"key" json:"key" jsonschema:"required"`
	Columns     Columns  `yaml:"columns,omitempty" json:"columns,omitempty"`
	Create      *bool    `yaml:"create,omitempty" json:"create,omitempty"`               // Defaults to true.
	OnBadRecord string   `yaml:"on_bad_record,omitempty" json:"on_bad_record,omitempty"` // Defaults to fail.
	Version     string   `yaml:"version,omitempty" json:"version,omitempty"`
	// Timeout bounds the database's waits (PostgreSQL); see TargetTimeout.
	Timeout *TargetTimeout `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// Mode is the permission of an SQLite target file idemsync creates, an
	// octal string such as "0640". Defaults to "0600", like the state file.
	Mode string `yaml:"mode,omitempty" json:"mode,omitempty"`
	// Deletes is what happens to rows a completed full pass did not see: keep,
	// soft or hard (docs/deletions.md). Defaults to keep.
	Deletes string `yaml:"deletes,omitempty" json:"deletes,omitempty"`
	// MaxDeleteRatio: a sweep that would remove more than this share of
	// the table's live rows fails its run. Defaults to 0.5.
	MaxDeleteRatio *float64 `yaml:"max_delete_ratio,omitempty" json:"max_delete_ratio,omitempty"`
	// Tombstone, when set, names a field and value that flag a deleted
	// record: it is deleted (hard) or marked (soft) on any run.
	Tombstone *Tombstone `yaml:"tombstone,omitempty" json:"tombstone,omitempty"`
	// Changes records an event for every row a run inserts, updates or
	// deletes, in the target database, in the rows' own transaction
	// (docs/changes.md); ChangesRows puts the row itself in each event.
	Changes     bool `yaml:"changes,omitempty" json:"changes,omitempty"`
	ChangesRows bool `yaml:"changes_rows,omitempty" json:"changes_rows,omitempty"`
	// Children are child tables filled from the records' nested arrays
	// (docs/job-file.md, "Child tables").
	Children Children `yaml:"children,omitempty" json:"children,omitempty"`
	// Schema is what a page may change of inferred columns: new columns
	// and type changes (docs/job-file.md, "The schema contract").
	Schema *SchemaContract `yaml:"schema,omitempty" json:"schema,omitempty"`
}

// ColumnSpec is one entry of target.columns: a name and either a bare path
// (`email: customer.email`) or `{path, type}`.
type ColumnSpec struct {
	Name string              `json:"-"`
	Path string              `yaml:"path,omitempty" json:"path,omitempty"`
	Type contract.ColumnType `yaml:"type,omitempty" json:"type,omitempty"`
	// Parent, in a child resource, names the parent table's column whose
	// value the column takes (instead of a path in the record).
	Parent string `yaml:"parent,omitempty" json:"parent,omitempty"`
	Line   int    `json:"-"`
}

// fieldError is a value a field's own UnmarshalYAML refuses. As a
// *yaml.TypeError the decoder records it and goes on, so that the keys
// after it are decoded and checked too: validate reports every problem
// together (docs/job-file.md, General rules).
func fieldError(format string, args ...any) error {
	return &yaml.TypeError{Errors: []string{fmt.Sprintf(format, args...)}}
}

// Columns is the ordered target.columns mapping.
type Columns []ColumnSpec

// UnmarshalYAML keeps the order the user wrote the columns in.
func (c *Columns) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fieldError("line %d: target.columns must be a mapping of column name to path or {path, type}", n.Line)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		col := ColumnSpec{Name: k.Value, Line: k.Line}
		switch v.Kind {
		case yaml.ScalarNode:
			col.Path = v.Value
		case yaml.MappingNode:
			for j := 0; j+1 < len(v.Content); j += 2 {
				ck, cv := v.Content[j], v.Content[j+1]
				if cv.Kind != yaml.ScalarNode {
					return fieldError("line %d: target.columns.%s.%s must be a string", cv.Line, k.Value, ck.Value)
				}
				switch ck.Value {
				case "path":
					col.Path = cv.Value
				case "type":
					col.Type = contract.ColumnType(cv.Value)
				case "parent":
					col.Parent = cv.Value
				default:
					return fieldError("line %d: unknown key target.columns.%s.%s (want path, type or parent)", ck.Line, k.Value, ck.Value)
				}
			}
		default:
			return fieldError("line %d: target.columns.%s must be a path or {path, type}", v.Line, k.Value)
		}
		*c = append(*c, col)
	}
	return nil
}

// Duration is a Go duration in a job file ("30s", "5m"), plus whole days
// ("7d" = 168h, "1d12h").
type Duration struct{ time.Duration }

// UnmarshalYAML parses a duration and names the line on failure.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseDuration(n.Value)
	if errors.Is(err, errDurationTooLong) && n.Kind == yaml.ScalarNode {
		return fieldError("line %d: %v", n.Line, err)
	}
	if err != nil || n.Kind != yaml.ScalarNode {
		return fieldError("line %d: invalid duration %q (want a Go duration such as 30s, 5m or 7d)", n.Line, n.Value)
	}
	if v < 0 {
		return fieldError("line %d: duration %q must not be negative", n.Line, n.Value)
	}
	d.Duration = v
	return nil
}

// errDurationTooLong is a number of days past what a duration holds.
var errDurationTooLong = fmt.Errorf("longer than the longest duration, about 292 years (%dd)", int64(math.MaxInt64/(24*time.Hour)))

// ParseDuration reads a Go duration, optionally led by a whole number of
// days: "30s", "5m", "7d", "1d12h". It returns an error for anything else.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	days, rest, ok := strings.Cut(s, "d")
	if !ok {
		return time.ParseDuration(s)
	}
	n, err := strconv.ParseInt(days, 10, 32)
	if err != nil || n < 0 || days == "" || days[0] == '+' {
		return 0, fmt.Errorf("invalid duration %q", s)
	}
	// Bounded: days past what a duration holds wrapped round (a
	// retention of 213504d was 25 minutes, and kept that little).
	if n > int64(math.MaxInt64/(24*time.Hour)) {
		return 0, fmt.Errorf("duration %q: %w", s, errDurationTooLong)
	}
	v := time.Duration(n) * 24 * time.Hour
	if rest != "" {
		r, err := time.ParseDuration(rest)
		if err != nil || r < 0 || rest[0] == '-' || rest[0] == '+' {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		if r > math.MaxInt64-v {
			return 0, fmt.Errorf("duration %q: %w", s, errDurationTooLong)
		}
		v += r
	}
	return v, nil
}

// MarshalYAML writes the duration back as a string.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// ByteSize is a size in bytes written as 64MiB, 512KB, 1048576.
type ByteSize int64

var byteUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1},
}

// ParseByteSize parses sizes such as 64MiB, 10MB, 512KiB or 1048576.
func ParseByteSize(s string) (ByteSize, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range byteUnits {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("invalid size")
	}
	return ByteSize(n * mult), nil
}

// UnmarshalYAML parses a byte size and names the line on failure.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseByteSize(n.Value)
	if err != nil || n.Kind != yaml.ScalarNode {
		return fieldError("line %d: invalid size %q (want e.g. 64MiB, 512KiB, 10MB)", n.Line, n.Value)
	}
	*b = v
	return nil
}

// QueryValue is the value of one source.query parameter: one value, or a
// list for a repeated key (expand[]: [a, b] sends expand[]=a&expand[]=b).
type QueryValue []string

// UnmarshalYAML reads a scalar as a one-value list.
func (q *QueryValue) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*q = QueryValue{n.Value}
		return nil
	case yaml.SequenceNode:
		out := make(QueryValue, 0, len(n.Content))
		for _, c := range n.Content {
			if c.Kind != yaml.ScalarNode {
				return fieldError("line %d: a query value is a string or a list of strings", c.Line)
			}
			out = append(out, c.Value)
		}
		*q = out
		return nil
	}
	return fieldError("line %d: a query value is a string or a list of strings", n.Line)
}

// BodyText is source.body as sent: a YAML mapping or list is sent as
// compact JSON, a string as it is.
type BodyText string

// UnmarshalYAML encodes a mapping or list as JSON.
func (b *BodyText) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*b = BodyText(n.Value)
		return nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return err
		}
		// Not a field error (excessive aliasing): name the line, and let
		// the decoding of the other keys go on.
		return fieldError("line %d: %s", n.Line, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	data, err := json.Marshal(jsonable(v))
	if err != nil {
		return fieldError("line %d: source.body: %v", n.Line, err)
	}
	*b = BodyText(data)
	return nil
}

// jsonable turns YAML's map[string]any values (nested anywhere) into what
// encoding/json writes as objects.
func jsonable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jsonable(e)
		}
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = jsonable(e)
		}
		return out
	case []any:
		for i, e := range x {
			x[i] = jsonable(e)
		}
	}
	return v
}
