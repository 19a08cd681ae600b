package postgres

import (
	"strconv"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

// keyCanon maps key values that a database holds equal to one Go value,
// for canonicalKeys. Values it does not know are returned as they are.
type keyCanon func(v any) any

// canonicalKeys returns the rows to write for one page: contract.Dedupe's
// result, except that key values equal in the database but different in Go
// (numeric "1.0" and "1", timestamps in different zones, -0 and 0) count as
// the same key. form returns the keyCanon of a column type, nil where Go's
// equality is the database's. PostgreSQL would otherwise refuse the page
// ("ON CONFLICT DO UPDATE command cannot affect row a second time").
func canonicalKeys(t *contract.Table, rows []contract.Row, form func(contract.ColumnType) keyCanon) ([]contract.Row, int) {
	keyIdx := make([]int, 0, len(t.Key))
	forms := make([]keyCanon, 0, len(t.Key))
	needed := false
	for i, c := range t.Columns {
		for _, k := range t.Key {
			if c.Name == k {
				f := form(c.Type)
				keyIdx, forms = append(keyIdx, i), append(forms, f)
				needed = needed || f != nil
			}
		}
	}
	if !needed {
		if kept, dropped, ok := lastOfEachIntKey(keyIdx, rows); ok {
			return kept, dropped
		}
		return contract.Dedupe(t, rows)
	}
	shadow := make([]contract.Row, len(rows))
	for i, r := range rows {
		vals := make([]any, len(r.Values))
		copy(vals, r.Values)
		for n, j := range keyIdx {
			if forms[n] != nil {
				vals[j] = forms[n](vals[j])
			}
		}
		shadow[i] = contract.Row{Values: vals, Hash: strconv.Itoa(i)}
	}
	kept, dropped := contract.Dedupe(t, shadow)
	if dropped == 0 {
		return rows, 0
	}
	out := make([]contract.Row, len(kept))
	for i, k := range kept {
		j, _ := strconv.Atoi(k.Hash)
		out[i] = rows[j]
	}
	return out, dropped
}

// lastOfEachIntKey is contract.Dedupe of a page keyed by one column that
// holds an int64 in every row (the usual key), without Dedupe's text of
// each key (2 allocations a row: docs/performance.md, "Round five"):
// keys in ascending order, an API's usual order, cannot repeat; others
// are told apart by a map of the integers. ok is false for any other
// page, which Dedupe reads.
func lastOfEachIntKey(keyIdx []int, rows []contract.Row) (kept []contract.Row, dropped int, ok bool) {
	if len(keyIdx) != 1 {
		return nil, 0, false
	}
	j := keyIdx[0]
	ascending := true
	for i, r := range rows {
		if j >= len(r.Values) {
			return nil, 0, false
		}
		k, isInt := r.Values[j].(int64)
		if !isInt {
			return nil, 0, false
		}
		if i > 0 && k <= rows[i-1].Values[j].(int64) {
			ascending = false
		}
	}
	if ascending {
		return rows, 0, true
	}
	last := make(map[int64]int, len(rows))
	for i, r := range rows {
		last[r.Values[j].(int64)] = i
	}
	if len(last) == len(rows) {
		return rows, 0, true
	}
	kept = make([]contract.Row, 0, len(last))
	for i, r := range rows {
		if last[r.Values[j].(int64)] == i {
			kept = append(kept, r)
		}
	}
	return kept, len(rows) - len(kept), true
}

// numericKey is the keyCanon of exact decimals: "1.0", "1" and "1e0" are
// one value.
func numericKey(v any) any {
	if s, ok := v.(string); ok {
		if d, ok := sqlkit.ParseDecimal(s); ok {
			return "n:" + d.Rat().RatString()
		}
	}
	return v
}

// timeKey is the keyCanon of timestamps: one instant in any zone is one
// value.
func timeKey(v any) any {
	if tm, ok := v.(time.Time); ok {
		return tm.UTC().Round(0)
	}
	return v
}

// realKey is the keyCanon of floats: -0 and 0 are one value.
func realKey(v any) any {
	if f, ok := sqlkit.AsFloat64(v); ok && f == 0 {
		return float64(0)
	}
	return v
}
