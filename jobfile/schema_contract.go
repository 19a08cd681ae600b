package jobfile

import "github.com/idemsync/idemsync/jobfile/spec"

// checkSchemaContract fills target.schema when it is not written (the
// rules fill a written block's missing keys), keeps the lines of its keys
// for the engine's messages, and refuses a contract other than the
// default on declared columns: there a field that is no column is not
// read and a value its column cannot take is a bad record, which
// on_bad_record governs (docs/job-file.md, "The schema contract").
func checkSchemaContract(t *spec.Target, infer bool, bad func(key, format string, args ...any), lines map[string]int) {
	if t.Schema == nil {
		t.Schema = &spec.SchemaContract{NewColumns: spec.NewColumnsEvolve, TypeChange: spec.TypeChangeWiden}
		return
	}
	s := t.Schema
	s.NewColumnsLine, s.TypeChangeLine = lines["target.schema.new_columns"], lines["target.schema.type_change"]
	if !infer && (!s.Evolves() || !s.Widens()) {
		bad("target.schema", "applies to inferred columns only (a job without target.columns): with columns declared, "+
			"a field that is no column is not read, and a value its column cannot take is a bad record that target.on_bad_record governs")
	}
}
