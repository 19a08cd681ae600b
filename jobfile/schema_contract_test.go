package jobfile

import (
	"strings"
	"testing"

	"github.com/idemsync/idemsync/jobfile/spec"
)

// inferredSpec is validSpec without target.columns: its columns are
// inferred, which target.schema governs.
var inferredSpec = validSpec[:strings.Index(validSpec, "  columns:\n")]

func TestSchemaContractDefaultsAndLines(t *testing.T) {
	vars := env(map[string]string{"API_TOKEN": "x"})
	job, err := Load([]byte(inferredSpec), "", vars)
	if err != nil {
		t.Fatal(err)
	}
	if s := job.Target.Schema; s == nil || s.NewColumns != spec.NewColumnsEvolve || s.TypeChange != spec.TypeChangeWiden {
		t.Fatalf("default target.schema = %+v, want evolve and widen", s)
	}
	job, err = Load([]byte(inferredSpec+"  schema:\n    new_columns: freeze\n"), "", vars)
	if err != nil {
		t.Fatal(err)
	}
	if s := job.Target.Schema; s.NewColumns != spec.NewColumnsFreeze || s.TypeChange != spec.TypeChangeWiden || s.NewColumnsLine != 18 || s.TypeChangeLine != 0 {
		t.Errorf("target.schema = %+v, want freeze (line 18) and widen (not written)", s)
	}
}

func TestSchemaContractErrors(t *testing.T) {
	vars := env(map[string]string{"API_TOKEN": "x"})
	for _, tt := range []struct {
		name, spec string
		want       []string
	}{
		{"bad new_columns", inferredSpec + "  schema: {new_columns: lock}\n", []string{"line 17", "target.schema.new_columns", `"lock"`, "evolve, freeze or discard"}},
		{"bad type_change", inferredSpec + "  schema:\n    type_change: narrow\n", []string{"line 18", "target.schema.type_change", "widen, freeze, discard_value or discard_row"}},
		{"with declared columns", validSpec + "  schema: {type_change: discard_row}\n", []string{"target.schema", "inferred columns", "on_bad_record"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load([]byte(tt.spec), "", vars)
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	// The defaults written out are allowed with declared columns: they
	// are what such a job does.
	if _, err := Load([]byte(validSpec+"  schema: {new_columns: evolve, type_change: widen}\n"), "", vars); err != nil {
		t.Errorf("declared columns with the default contract: %v", err)
	}
}
