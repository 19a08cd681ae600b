package spec

import (
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func TestParseDuration(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"30s", 30 * time.Second, true},
		{"5m", 5 * time.Minute, true},
		{"7d", 168 * time.Hour, true},
		{" 30d ", 720 * time.Hour, true},
		{"1d12h", 36 * time.Hour, true},
		{"0d", 0, true},
		{"d", 0, false},
		{"-1d", 0, false},
		{"+1d", 0, false},
		{"1d-1h", 0, false},
		{"1.5d", 0, false},
		{"1dd", 0, false},
		{"days", 0, false},
		{"", 0, false},
		// The largest whole number of days a duration holds, and past it:
		// 213504d wrapped round to 26 minutes (a retention of centuries
		// that kept 26 minutes), 106752d to a negative duration.
		{"106751d", 106751 * 24 * time.Hour, true},
		{"106752d", 0, false},
		{"213504d", 0, false},
		{"2147483647d", 0, false},
		{"106751d23h", 2562047 * time.Hour, true},
		{"106751d24h", 0, false},
	} {
		got, err := ParseDuration(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, ok=%v", c.in, got, err, c.want, c.ok)
		}
	}
}

// A duration longer than a duration holds is an error naming its line and
// the bound, never a shorter duration.
func TestDurationTooLongNamesLine(t *testing.T) {
	var v struct {
		Retention Duration `yaml:"retention"`
	}
	err := yaml.Unmarshal([]byte("name: x\nretention: 213504d\n"), &v)
	if err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "106751d") {
		t.Fatalf("retention: 213504d: %v (%v), want an error naming line 2 and the longest 106751d", err, v.Retention)
	}
}
