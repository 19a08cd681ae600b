// Package initgen writes the commented job file `idemsync init` proposes:
// from one fetched page of an API (Fetch, Build), it finds the records,
// the pagination style (by the engine's style table, package sync), a key
// and typed columns. It neither runs a job nor writes a file: cmd/init.go
// holds the command, its flags and its output. What init detects and what
// it leaves to the user: docs/job-file.md, "Starting from idemsync init".
package initgen
