// Package sync is idemsync's ground floor: the domain (the validated job
// and its spec types, which package jobfile produces from a job file;
// positions, records and rows, checkpoints, errors with exit codes)
// and the engine that moves one page at a time from a PageSource to a
// Sink and commits the checkpoint in a Store. It imports nothing of the
// project's own: sources (source/http), sinks (sink/) and the state file
// (checkpoint/) import it, and cmd/ wires them together.
//
// Importers name it idsync, as it shadows the standard library's sync.
package sync
