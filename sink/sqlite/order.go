package sqlite

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

// compare orders an engine value a against a stored value b: negative,
// zero or positive. It fails when the two cannot be compared.
type compare func(a, b any) (int, error)

// versionNewer reports whether a row whose version is next may overwrite a
// stored row whose version is stored: true when stored is NULL, false when
// next is NULL (and stored is not), otherwise next >= stored by cmp, the
// compare of the column's type. stored comes from the database (SQLite
// storage classes); next from the engine. It fails when the two cannot be
// compared.
func versionNewer(c *contract.Column, cmp compare, next, stored any) (bool, error) {
	if stored == nil {
		return true, nil
	}
	if next == nil {
		return false, nil
	}
	n, err := cmp(next, stored)
	if err != nil {
		return false, fmt.Errorf("compare version column %q: %w", c.Name, err)
	}
	return n >= 0, nil
}

// compareNumbers is the compare of numbers and booleans: by exact value,
// whether each is an integer, a float, decimal text or a bool (true is 1).
func compareNumbers(a, b any) (int, error) {
	ra, err := toRat(a)
	if err != nil {
		return 0, err
	}
	rb, err := toRat(b)
	if err != nil {
		return 0, err
	}
	return ra.Cmp(rb), nil
}

// compareTimes is the compare of timestamps: by instant, each a time.Time
// or RFC 3339 text.
func compareTimes(a, b any) (int, error) {
	ta, err := toTime(a)
	if err != nil {
		return 0, err
	}
	tb, err := toTime(b)
	if err != nil {
		return 0, err
	}
	return ta.Compare(tb), nil
}

// compareTexts is the compare of text: by bytes, any value rendered by
// ToText. It never fails.
func compareTexts(a, b any) (int, error) {
	return strings.Compare(sqlkit.ToText(a), sqlkit.ToText(b)), nil
}

func toRat(v any) (*big.Rat, error) {
	switch x := v.(type) {
	case bool:
		if x {
			return big.NewRat(1, 1), nil
		}
		return new(big.Rat), nil
	case string:
		if d, ok := sqlkit.ParseDecimal(x); ok {
			return d.Rat(), nil
		}
		return nil, fmt.Errorf("%q is not a number", x)
	case []byte:
		return toRat(string(x))
	}
	if i, ok := sqlkit.AsInt64(v); ok {
		return new(big.Rat).SetInt64(i), nil
	}
	if f, ok := sqlkit.AsFloat64(v); ok {
		r, ok := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
		if !ok {
			return nil, fmt.Errorf("%v is not a finite number", f)
		}
		return r, nil
	}
	return nil, fmt.Errorf("%T is not a number", v)
}

func toTime(v any) (time.Time, error) {
	switch x := v.(type) {
	case time.Time:
		return x, nil
	case string:
		return time.Parse(time.RFC3339Nano, x)
	case []byte:
		return time.Parse(time.RFC3339Nano, string(x))
	}
	return time.Time{}, fmt.Errorf("%T is not a timestamp", v)
}
