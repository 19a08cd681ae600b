// Package jobfile reads idemsync's job files: YAML decoding with line
// numbers, unknown keys (with a suggestion for a misspelt one), ${VAR} and
// ${VAR:-default} expansion (every expanded value is registered as a
// secret), the defaults and the validation of every block. It produces the
// validated idsync.Job the engine runs; package sync never imports it.
//
// Every problem names its key and line; all of a file's problems are
// reported at once in a *SpecError, of class contract.Invalid (exit 2).
package jobfile
