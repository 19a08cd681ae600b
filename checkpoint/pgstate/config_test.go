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
