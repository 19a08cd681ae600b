//go:build race

package postgres

// raceEnabled: the race detector allocates on its own, so the tests that
// count allocations skip under it.
const raceEnabled = true
