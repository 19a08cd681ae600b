package pgstate

import (
	"strings"
	"testing"
)

// ?schema= takes a PostgreSQL identifier of at most 63 characters, not
// starting with a digit; the bound is checked apart from the pattern.
func TestConfigSchemaBounds(t *testing.T) {
	longest := "s" + strings.Repeat("x", 62)
	for _, ok := range []string{longest, "_a", "a1", "A_b"} {
		if _, schema, _, err := config("postgres://u@h/db?schema=" + ok); err != nil || schema != ok {
			t.Errorf("schema %q: %q, %v", ok, schema, err)
		}
	}
	for _, bad := range []string{longest + "x", "1a", "a-b", "a.b", "é"} {
		if _, _, _, err := config("postgres://u@h/db?schema=" + bad); err == nil {
			t.Errorf("schema %q accepted", bad)
		}
	}
}

// A parameter given twice is refused, not read as its first value: libpq
// reads the last, and a host whose URL ends in &schema=b would keep its
// state in a, beside the hosts whose URL says only ?schema=b
// (docs/operations.md, "State in PostgreSQL").
func TestConfigRepeatedParameter(t *testing.T) {
	for _, bad := range []string{
		"postgres://u@h/db?schema=a&schema=b",
		"postgres://u@h/db?schema=a&schema=a",
		"postgres://u@h/db?lease=10s&lease=1m",
	} {
		_, schema, _, err := config(bad)
		if err == nil || !strings.Contains(err.Error(), "twice") {
			t.Errorf("%s: schema %q, %v; want refused as given twice", bad, schema, err)
		}
	}
}
