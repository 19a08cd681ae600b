package sync

import "testing"

func FuzzNormalizeMark(f *testing.F) {
	for _, s := range []string{
		"2024-01-01T02:00:00+02:00", "2024-01-01T00:00:00.500Z", "0000-01-01T00:30:00+01:00",
		"9999-12-31T23:30:00-01:00", "100", "-2.50", "1e3", "0x1F", "1/3", "yesterday", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := NormalizeMark(s)
		if err != nil {
			return
		}
		again, err := NormalizeMark(n)
		if err != nil || again != n {
			t.Fatalf("NormalizeMark(%q) = %q, which normalises to %q, %v", s, n, again, err)
		}
		if CompareMarks(n, n) != 0 || CompareMarks("", n) >= 0 || CompareMarks(n, "") <= 0 {
			t.Fatalf("CompareMarks is not an order on %q", n)
		}
		if m, err := SubtractOverlap(n, "1h"); err == nil {
			if _, err := NormalizeMark(m); err != nil || CompareMarks(m, n) > 0 {
				t.Fatalf("SubtractOverlap(%q, 1h) = %q: %v", n, m, err)
			}
		}
	})
}
