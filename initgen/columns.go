package initgen

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/idemsync/idemsync/infer"
)

// initColumn is one column init writes: its name, the path of its value in
// each record and its type.
type initColumn struct{ name, path, typ string }

// detectColumns maps every top-level field of the records, in the order
// they first appear, to a column typed by the inference a run without
// columns uses (infer.Fields: the whole page decides), text for a field
// that was always null.
func detectColumns(recs []gjson.Result) []initColumn {
	order, types := infer.Fields(recs)
	used := map[string]bool{}
	cols := make([]initColumn, 0, len(order))
	for _, key := range order {
		typ := types[key]
		if typ == "" {
			typ = infer.Text
		}
		cols = append(cols, initColumn{name: columnName(key, used), path: escapePath(key), typ: typ})
	}
	return cols
}

// columnName turns a JSON key into a lowercase snake_case column name
// unique among used: createdAt → created_at, "Unit Price" → unit_price.
func columnName(key string, used map[string]bool) string {
	var b strings.Builder
	prevLower := false
	for _, r := range key {
		switch {
		case r >= 'A' && r <= 'Z':
			if prevLower {
				b.WriteByte('_')
			}
			b.WriteRune(r + 'a' - 'A')
			prevLower = false
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			prevLower = true
		default:
			b.WriteByte('_')
			prevLower = false
		}
	}
	name := strings.Trim(b.String(), "_")
	for strings.Contains(name, "__") {
		name = strings.ReplaceAll(name, "__", "_")
	}
	if name == "" || name[0] >= '0' && name[0] <= '9' || strings.HasPrefix(name, "idemsync") {
		name = "f_" + name
	}
	if len(name) > 60 {
		name = name[:60]
	}
	base := name
	for i := 2; used[name]; i++ {
		name = base + "_" + strconv.Itoa(i)
	}
	used[name] = true
	return name
}

// detectKey picks the key column: id (or an id-like field: uuid, key, a
// field ending in _id or Id that names the records, of) present, scalar
// and unique in every record; else the first field that is. It returns
// the column and whether it is only a guess (no id-like field qualified).
// A field ending in _id that names something else (an order's user_id)
// is a guess however unique on the first page: it may name another
// record, shared by many of these (docs/job-file.md, "What init refuses
// to guess").
func detectKey(recs []gjson.Result, cols []initColumn, of string) (initColumn, bool) {
	for want := 0; want <= 2; want++ {
		for _, c := range cols {
			k := strings.ReplaceAll(c.path, `\`, "")
			if keyRank(k) == want && (want < 2 || namesRecords(k, of)) && uniqueIn(recs, c) {
				return c, false
			}
		}
	}
	for _, c := range cols {
		if uniqueIn(recs, c) {
			return c, true
		}
	}
	return cols[0], true
}

// uniqueIn reports whether column c is present, scalar, of a type a key
// can have, and unique in every record.
func uniqueIn(recs []gjson.Result, c initColumn) bool {
	if c.typ == "json" || c.typ == "boolean" || c.typ == "numeric" {
		return false
	}
	seen := map[string]bool{}
	for _, r := range recs {
		v := r.Get(c.path)
		if !v.Exists() || v.Type == gjson.Null || seen[v.Raw] {
			return false
		}
		seen[v.Raw] = true
	}
	return true
}

// namesRecords reports whether an id field's name (order_id, orderId)
// names the records listed under name (orders, order, order-lines →
// order_line_id, categories → category_id).
func namesRecords(field, name string) bool {
	n, f := normKey(name), strings.TrimSuffix(normKey(field), "id")
	return n != "" && (f == n || f+"s" == n || f+"es" == n || strings.TrimSuffix(f, "y")+"ies" == n && strings.HasSuffix(f, "y"))
}

// keyRank ranks a field name as a key: 0 id, 1 uuid, guid or key, 2 a name
// ending in _id, Id or ID, 3 anything else.
func keyRank(k string) int {
	switch n := normKey(k); {
	case n == "id":
		return 0
	case n == "uuid" || n == "guid" || n == "key":
		return 1
	case strings.HasSuffix(k, "_id") || strings.HasSuffix(k, "Id") || strings.HasSuffix(k, "ID"):
		return 2
	}
	return 3
}
