package sync

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Spec is a job file as written by the user (SPEC §3), after ${VAR}
// expansion and before defaults. Load fills defaults and validates it.
type Spec struct {
	Name        string       `yaml:"name" json:"name" jsonschema:"required"`
	State       string       `yaml:"state,omitempty" json:"state,omitempty"`
	Source      Source       `yaml:"source" json:"source" jsonschema:"required"`
	Pagination  Pagination   `yaml:"pagination,omitempty" json:"pagination,omitempty"`
	Incremental *Incremental `yaml:"incremental,omitempty" json:"incremental,omitempty"`
	Retry       Retry        `yaml:"retry,omitempty" json:"retry,omitempty"`
	Target      Target       `yaml:"target" json:"target" jsonschema:"required"`
}

// Source says where and how pages are requested.
type Source struct {
	URL         string            `yaml:"url" json:"url" jsonschema:"required"`
	Method      string            `yaml:"method,omitempty" json:"method,omitempty"` // Defaults to GET.
	Headers     map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
	Query       map[string]string `yaml:"query,omitempty" json:"query,omitempty"`
	Body        string            `yaml:"body,omitempty" json:"body,omitempty"`
	Records     string            `yaml:"records,omitempty" json:"records,omitempty"` // Defaults to the body itself.
	Timeout     Duration          `yaml:"timeout,omitempty" json:"timeout,omitempty"` // Defaults to 30s.
	RateLimit   float64           `yaml:"rate_limit,omitempty" json:"rate_limit,omitempty"`
	Concurrency int               `yaml:"concurrency,omitempty" json:"concurrency,omitempty"` // Defaults to 1.
	MaxBody     ByteSize          `yaml:"max_body,omitempty" json:"max_body,omitempty"`       // Defaults to 64MiB.
	ErrorPath   string            `yaml:"error_path,omitempty" json:"error_path,omitempty"`
	// InsecureSkipTLSVerify turns TLS certificate verification off for this
	// job only. Named long on purpose; a warning is logged on every run.
	InsecureSkipTLSVerify bool `yaml:"insecure_skip_tls_verify,omitempty" json:"insecure_skip_tls_verify,omitempty"`
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
	Total      string `yaml:"total,omitempty" json:"total,omitempty"`
	Next       string `yaml:"next,omitempty" json:"next,omitempty"`
	NextHeader string `yaml:"next_header,omitempty" json:"next_header,omitempty"`
	NextURL    string `yaml:"next_url,omitempty" json:"next_url,omitempty"`
	Field      string `yaml:"field,omitempty" json:"field,omitempty"`
	Initial    string `yaml:"initial,omitempty" json:"initial,omitempty"`
	Overlap    string `yaml:"overlap,omitempty" json:"overlap,omitempty"`
	Continue   bool   `yaml:"continue,omitempty" json:"continue,omitempty"`
}

// Incremental describes a since-window sent on every request of a run.
type Incremental struct {
	Field   string `yaml:"field" json:"field" jsonschema:"required"`
	Param   string `yaml:"param" json:"param" jsonschema:"required"`
	Initial string `yaml:"initial,omitempty" json:"initial,omitempty"`
	Overlap string `yaml:"overlap,omitempty" json:"overlap,omitempty"`
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
}

// ColumnSpec is one entry of target.columns: a name and either a bare path
// (`email: customer.email`) or `{path, type}`.
type ColumnSpec struct {
	Name string     `json:"-"`
	Path string     `yaml:"path,omitempty" json:"path,omitempty"`
	Type ColumnType `yaml:"type,omitempty" json:"type,omitempty"`
	Line int        `json:"-"`
}

// Columns is the ordered target.columns mapping.
type Columns []ColumnSpec

// UnmarshalYAML keeps the order the user wrote the columns in.
func (c *Columns) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: target.columns must be a mapping of column name to path or {path, type}", n.Line)
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
					return fmt.Errorf("line %d: target.columns.%s.%s must be a string", cv.Line, k.Value, ck.Value)
				}
				switch ck.Value {
				case "path":
					col.Path = cv.Value
				case "type":
					col.Type = ColumnType(cv.Value)
				default:
					return fmt.Errorf("line %d: unknown key target.columns.%s.%s (want path or type)", ck.Line, k.Value, ck.Value)
				}
			}
		default:
			return fmt.Errorf("line %d: target.columns.%s must be a path or {path, type}", v.Line, k.Value)
		}
		*c = append(*c, col)
	}
	return nil
}

// Duration is a Go duration in a job file ("30s", "5m").
type Duration struct{ time.Duration }

// UnmarshalYAML parses a Go duration and names the line on failure.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(strings.TrimSpace(n.Value))
	if err != nil || n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: invalid duration %q (want a Go duration such as 30s or 5m)", n.Line, n.Value)
	}
	if v < 0 {
		return fmt.Errorf("line %d: duration %q must not be negative", n.Line, n.Value)
	}
	d.Duration = v
	return nil
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
		return fmt.Errorf("line %d: invalid size %q (want e.g. 64MiB, 512KiB, 10MB)", n.Line, n.Value)
	}
	*b = v
	return nil
}
