package postgres

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
	"github.com/jackc/pgx/v5/pgtype"
)

// copyOIDs are the types of the columns idemsync creates, as COPY's
// statement description gave them to pgx's CopyFrom (copyTypes).
var copyOIDs = map[contract.ColumnType]uint32{
	contract.TypeText: pgtype.TextOID, contract.TypeInteger: pgtype.Int8OID, contract.TypeReal: pgtype.Float8OID,
	contract.TypeNumeric: pgtype.NumericOID, contract.TypeBoolean: pgtype.BoolOID,
	contract.TypeTimestamp: pgtype.TimestamptzOID, contract.TypeJSON: pgtype.JSONBOID,
}

// pgxCopyStream is what pgx's CopyFrom sent for a page before COPY was
// encoded by copyPage: the merge's values of each row (pageValues), its
// hash and the synced-at time, each encoded by pgx's type map in the
// binary form of the column's type, in COPY's binary framing.
func pgxCopyStream(t *testing.T, tbl *contract.Table, kept []contract.Row, synced time.Time) []byte {
	t.Helper()
	data, err := pageValues("test", tbl, kept)
	if err != nil {
		t.Fatal(err)
	}
	m := pgtype.NewMap()
	oids := make([]uint32, 0, len(tbl.Columns)+2)
	for _, c := range tbl.Columns {
		oids = append(oids, copyOIDs[c.Type])
	}
	oids = append(oids, pgtype.TextOID, pgtype.TimestamptzOID)
	buf := append([]byte("PGCOPY\n\377\r\n\000"), 0, 0, 0, 0, 0, 0, 0, 0)
	for _, row := range data {
		buf = append(buf, byte(len(oids)>>8), byte(len(oids)))
		for i, v := range append(row, synced) {
			sp := len(buf)
			buf = append(buf, 0xff, 0xff, 0xff, 0xff)
			out, err := m.Encode(oids[i], pgtype.BinaryFormatCode, v, buf)
			if err != nil {
				t.Fatalf("pgx encoding %#v: %v", v, err)
			}
			if out != nil {
				binary.BigEndian.PutUint32(out[sp:], uint32(len(out)-sp-4))
				buf = out
			}
		}
	}
	return append(buf, 0xff, 0xff)
}

// copyAllTypes is a table of every column type.
func copyAllTypes() *contract.Table {
	return &contract.Table{Name: "all", Key: []string{"id"}, Columns: []contract.Column{
		{Name: "id", Type: contract.TypeInteger}, {Name: "t", Type: contract.TypeText}, {Name: "r", Type: contract.TypeReal},
		{Name: "n", Type: contract.TypeNumeric}, {Name: "b", Type: contract.TypeBoolean},
		{Name: "ts", Type: contract.TypeTimestamp}, {Name: "j", Type: contract.TypeJSON},
	}}
}

// numericCorpus holds decimals whose binary form has an edge: zeros of
// every scale and sign, exponents either side of each base-10,000 digit
// boundary, leading and trailing zeros, and the limits ParseDecimal keeps.
var numericCorpus = []string{
	"0", "-0", "+0", "0.0", "-0.000", "00000", "0e5", "0e-5", "0.0000e-3", ".0", "0.",
	"1", "-1", "+1", "9999", "10000", "-10000", "10001", "99999999", "100000000", "123456789",
	"0.1", "0.01", "0.001", "0.0001", "0.00001", "0.00000001", "1.5", "-1.50", "1.0000", "12.340000",
	"1e1", "1e2", "1e3", "1e4", "1e5", "1E8", "1e-1", "1e-2", "1e-3", "1e-4", "1e-5", "-2.5e-7", "123.456e2", "123.456e-2",
	"1.5e+3", "15e-1", "000123.4500", "-00.00100", ".5", "5.", "-.5e3",
	"12345678901234567890.123456789012345678901", "-98765432109876543210987654321", "0.000000000000000000000000000001",
	"1e16383", "1e-16383", "1e131071", "-" + strings.Repeat("9", 200) + "." + strings.Repeat("9", 200),
	"1" + strings.Repeat("0", 131071), "0." + strings.Repeat("0", 16382) + "1",
}

// The page's COPY stream is byte for byte what pgx's CopyFrom sent for
// the merge's values: every column type, NULLs, empty text, text COPY's
// text format would escape, decimals at every edge of numeric's binary
// form, timestamps before 1970 and 2000, below the microsecond and in
// other zones, floats at their limits, Go types each column accepts.
func TestCopyPageEncodesAsPgx(t *testing.T) {
	tbl := copyAllTypes()
	ist := time.FixedZone("IST", 5*3600+1800)
	times := []time.Time{
		time.Date(2024, 5, 1, 17, 30, 0, 123456789, ist), time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(1999, 12, 31, 23, 59, 59, 500, time.UTC), time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC), time.Date(294276, 12, 31, 23, 59, 59, 999999000, time.UTC),
		time.Date(1850, 3, 4, 5, 6, 7, 890, time.FixedZone("LMT", -17762)),
	}
	reals := []any{0.0, math.Copysign(0, -1), 0.1, -1e308, 5e-324, math.Inf(1), math.NaN(), float32(1.5), int64(-7), 3}
	texts := []string{"", "plain", "tab\there\nnew line\r \\N \\\\ back\\slash 'q' \"d\"", "ü ✓ 😀", strings.Repeat("x", 70000)}
	jsons := []any{`null`, `{"a":[1,2,{"b":null}],"esc":"\t\n\\\"","ü":"✓"}`, `"s"`, `[]`, []byte(`{"b":1}`), json.RawMessage(`[1.50,2e3]`)}
	ints := []any{int64(0), int64(-1), int64(math.MaxInt64), int64(math.MinInt64), 42, int32(-5)}
	var rows []contract.Row
	for i, n := range numericCorpus {
		rows = append(rows, contract.Row{Values: []any{
			ints[i%len(ints)], texts[i%len(texts)], reals[i%len(reals)], n, i%2 == 0,
			times[i%len(times)], jsons[i%len(jsons)],
		}, Hash: fmt.Sprintf("h%03d", i)})
	}
	rows = append(rows, contract.Row{Values: make([]any, len(tbl.Columns)), Hash: "nulls"})
	synced := time.Date(2026, 11, 26, 19, 0, 0, 123456789, time.UTC)
	got, err := copyPage(nil, "test", tbl, rows, synced)
	if err != nil {
		t.Fatal(err)
	}
	if want := pgxCopyStream(t, tbl, rows, synced); !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Fatalf("COPY stream differs from pgx's at byte %d of %d (pgx's: %d bytes)", i, len(got), len(want))
	}
}

// A value whose Go type its column cannot take fails the page as the
// merge's conversion (pageValues) does, with the same error, and so does
// a row of the wrong width.
func TestCopyPageRefusesWhatTheMergeRefuses(t *testing.T) {
	tbl := copyAllTypes()
	good := []any{int64(1), "t", 1.5, "1.5", true, time.Unix(0, 0), `{}`}
	for j, bad := range []any{"1", 1, "x", "1.2.3", "true", "2024-01-01", `{"a":`} {
		vals := append([]any(nil), good...)
		vals[j] = bad
		rows := []contract.Row{{Values: good, Hash: "a"}, {Values: vals, Hash: "b"}}
		_, want := pageValues("op", tbl, rows)
		_, err := copyPage(nil, "op", tbl, rows, time.Now())
		if want == nil || err == nil || err.Error() != want.Error() {
			t.Errorf("column %s holding %#v: copyPage error %v, want the merge's %v", tbl.Columns[j].Name, bad, err, want)
		}
	}
	rows := []contract.Row{{Values: good[:3], Hash: "short"}}
	_, want := pageValues("op", tbl, rows)
	if _, err := copyPage(nil, "op", tbl, rows, time.Now()); want == nil || err == nil || err.Error() != want.Error() {
		t.Errorf("a short row: copyPage error %v, want the merge's %v", err, want)
	}
}

// Encoding a copied page allocates next to nothing per row once its
// buffer has grown: pgx's encoding of the merge's values allocated 25
// objects a row of the bench's shape (each value boxed, a decimal's
// big.Int and its base-10,000 digits: docs/performance.md, "Round five").
func TestCopyPageAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	tbl := &contract.Table{Name: "orders", Key: []string{"id"}, Columns: []contract.Column{
		{Name: "id", Type: contract.TypeInteger}, {Name: "name", Type: contract.TypeText}, {Name: "email", Type: contract.TypeText},
		{Name: "total", Type: contract.TypeNumeric}, {Name: "active", Type: contract.TypeBoolean},
		{Name: "updated_at", Type: contract.TypeTimestamp}, {Name: "tags", Type: contract.TypeJSON},
	}}
	rows := make([]contract.Row, 1000)
	for i := range rows {
		rows[i] = contract.Row{Values: []any{int64(i + 1000), fmt.Sprintf("order %d", i), fmt.Sprintf("c%d@example.com", i),
			fmt.Sprintf("%d.%02d", i*7, i%100), i%3 == 0, time.Unix(1700000000+int64(i), 0).UTC(),
			`["alpha","beta","gamma","delta","epsilon","zeta"]`}, Hash: fmt.Sprintf("%064d", i)}
	}
	buf, err := copyPage(nil, "test", tbl, rows, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(5, func() {
		if buf, err = copyPage(buf[:0], "test", tbl, rows, time.Now()); err != nil {
			t.Fatal(err)
		}
	})
	if perRow := allocs / float64(len(rows)); perRow > 0.05 {
		t.Errorf("copyPage allocates %.2f objects a row, want at most 0.05", perRow)
	}
}

// The binary form of every decimal ParseDecimal accepts is pgx's for the
// merge's value of it (numericValue), and what it refuses copyPage
// refuses.
func FuzzCopyNumeric(f *testing.F) {
	for _, s := range numericCorpus {
		if len(s) < 100 { // the longest are TestCopyPageEncodesAsPgx's: mutated, pgx's big.Int arithmetic on them outlasts the fuzzer's patience
			f.Add(s)
		}
	}
	for _, s := range []string{"", "-", "+", ".", "e", "1e", "1.2.3", "--1", "1e+", "0x10", " 1", "1 ", "١", "1e99999999999"} {
		f.Add(s)
	}
	m := pgtype.NewMap()
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := appendNumeric(nil, s)
		if _, parsed := sqlkit.ParseDecimal(s); ok != parsed {
			t.Fatalf("%q: appendNumeric ok %v, ParseDecimal ok %v", s, ok, parsed)
		}
		if !ok {
			return
		}
		v, _ := numericValue(s)
		want, err := m.Encode(pgtype.NumericOID, pgtype.BinaryFormatCode, v, nil)
		if err != nil {
			t.Fatalf("%q: pgx: %v", s, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%q: binary form %x, pgx's %x", s, got, want)
		}
	})
}
