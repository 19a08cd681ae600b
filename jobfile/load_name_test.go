package jobfile

import (
	"errors"
	"testing"
)

func TestSpecErrorName(t *testing.T) {
	env := map[string]string{"JOB": "from-env"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct{ name, yaml, want string }{
		{"plain", "name: orders\nsource: {tiemout: 1}\n", "orders"},
		{"from env", "name: ${JOB}\nbogus: 1\n", "from-env"},
		{"unset var", "name: ${NOPE}\nbogus: 1\n", ""},
		{"no name", "source: {}\n", ""},
		{"not a mapping", "- a\n- b\n", ""},
		{"not yaml", "name: [unclosed\n", ""},
		{"nested name only", "source: {name: x}\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load([]byte(tt.yaml), "", lookup)
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("Load: %v, want a *SpecError", err)
			}
			if got := SpecName(err); got != tt.want || se.Name != tt.want {
				t.Errorf("SpecName = %q (field %q), want %q", got, se.Name, tt.want)
			}
		})
	}
	if got := SpecName(errors.New("other")); got != "" {
		t.Errorf("SpecName of a non-spec error = %q", got)
	}
}
