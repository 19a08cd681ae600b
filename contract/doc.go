// Package contract is idemsync's contract: the values every part shares
// (tables, rows, column types, counts, runs and page commits), the
// interfaces the engine consumes and the leaves implement (the source of
// pages, the target sink, the state store) and the classes of error that
// the command line maps to exit codes.
//
// Leaves (sink/…, checkpoint/…, source/…) import this package, never the
// engine (sync/). See docs/architecture.md.
package contract
