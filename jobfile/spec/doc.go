// Package spec holds the job file's types as the user writes them (Spec,
// Source, Auth, Pagination, Target ...) and their YAML decoding
// (docs/job-file.md). Package jobfile loads, fills and validates them; the
// engine (package sync) reads them through its Job. They live in a package
// of their own, below both, because jobfile imports the engine's rules
// (the style table, marks, auth types): in jobfile itself the engine could
// not import them without an import cycle.
package spec
