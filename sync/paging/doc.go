// Package paging holds the pagination styles and the positions they
// address: one file per style (style_page.go, style_offset.go, ...) with
// its position type, its step after a fetched page, its request
// parameters, its defaults and its codec, all listed once in styleTable.
// Position is the envelope the engine keeps around a style's position
// (its window, the windows in flight, the parent row); its codec and its
// description for people are here, so that reading a checkpoint (status,
// replay) needs no engine. Marks (the hwm style's and incremental's) live
// here too. The engine (package sync) drives a walk through the Style
// interface; this package does not import it (docs/architecture.md).
package paging
