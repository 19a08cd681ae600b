// Package sync is idemsync's engine and the domain above the contract (the
// validated job and its spec types, which package jobfile produces from a
// job file; positions, records mapped to rows, checkpoints): it moves one
// page at a time from a contract.PageSource to a contract.Sink and commits
// the checkpoint in a Store. It imports contract/ and infer/ only; the
// sinks (sink/) import contract/ alone, and cmd/ wires the parts together.
//
// Importers name it idsync, as it shadows the standard library's sync.
package sync
