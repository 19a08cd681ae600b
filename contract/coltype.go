package contract

// ColumnType is the type of a target column (docs/job-file.md, "Columns").
type ColumnType string

// Column types. Each backend maps them to its own SQL types.
const (
	TypeText      ColumnType = "text"      // Go string
	TypeInteger   ColumnType = "integer"   // Go int64
	TypeReal      ColumnType = "real"      // Go float64
	TypeNumeric   ColumnType = "numeric"   // Go string holding an exact decimal, e.g. "12.50"
	TypeBoolean   ColumnType = "boolean"   // Go bool
	TypeTimestamp ColumnType = "timestamp" // Go time.Time (UTC)
	TypeJSON      ColumnType = "json"      // Go string holding compact JSON
)

// ColumnTypes lists every valid ColumnType.
var ColumnTypes = []ColumnType{TypeText, TypeInteger, TypeReal, TypeNumeric, TypeBoolean, TypeTimestamp, TypeJSON}

// Valid reports whether t is one of ColumnTypes.
func (t ColumnType) Valid() bool {
	for _, c := range ColumnTypes {
		if c == t {
			return true
		}
	}
	return false
}
