package sinktest

import "testing"

// testCase is one check of the suite, run on a fresh DB.
type testCase struct {
	name string
	run  func(t *testing.T, b *DB)
}

// Run runs the conformance suite: every case as a subtest of t, each on a
// fresh database from newDB (a new SQLite file, a new PostgreSQL schema),
// skipping the cases named in the DB's Skip. A new database passes it
// unchanged.
func Run(t *testing.T, newDB func(t *testing.T) *DB) {
	t.Helper()
	var cases []testCase
	cases = append(cases, conformanceCases()...)
	cases = append(cases, keyCases()...)
	cases = append(cases, parentCases()...)
	cases = append(cases, verifyCases()...)
	cases = append(cases, softCases()...)
	cases = append(cases, sweepCases()...)
	cases = append(cases, readBackCases()...)
	cases = append(cases, ownerCases()...)
	cases = append(cases, testCase{"table state", tableState})
	cases = append(cases, testCase{"live rows", liveRows})
	cases = append(cases, testCase{"two passes", twoPasses})
	cases = append(cases, changeCases()...)
	cases = append(cases, childCases()...)
	cases = append(cases, testCase{"sweep counts when every live row was seen", seenLive})
	cases = append(cases, testCase{"first load counts a record listed twice", freshLoad})
	cases = append(cases, testCase{"schema plan", planSchema})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newDB(t)
			if reason, ok := b.Skip[tc.name]; ok {
				t.Skip(reason)
			}
			tc.run(t, b)
		})
	}
}
