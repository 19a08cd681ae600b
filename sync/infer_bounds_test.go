package sync

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/infer"
)

// The inference types numeric exactly the numbers a numeric column takes:
// one it typed numeric but Convert refused was a bad record on every run
// (docs/job-file.md, "Without columns").
func TestInferNumericIsConvertible(t *testing.T) {
	for _, raw := range []string{"1.5", "1e9999", "1e+9999", "1E-9999", "1e99999", "1e-10000", "-0.0",
		"1" + strings.Repeat("0", 999), "1" + strings.Repeat("0", 1000), "0." + strings.Repeat("1", 998), "0." + strings.Repeat("1", 999)} {
		v := gjson.Parse(raw)
		_, err := Convert(v, contract.TypeNumeric)
		if numeric := infer.Of(v) == infer.Numeric || infer.Of(v) == infer.Integer; numeric != (err == nil) {
			t.Errorf("%.20s (%d chars): inferred %s, Convert to numeric: %v", raw, len(raw), infer.Of(v), err)
		}
	}
}
