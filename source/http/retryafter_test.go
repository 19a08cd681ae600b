package httpsource

import (
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"3", 3 * time.Second, true},
		{" 0 ", 0, true},
		{"Wed, 01 Jan 2025 12:00:05 GMT", 5 * time.Second, true},
		{"Wed, 01 Jan 2025 11:00:00 GMT", 0, true},
		{"soon", 0, false},
		{"-1", 0, false},
		{"", 0, false},
		{"1.5", 0, false},
	}
	for _, tt := range tests {
		got, ok := ParseRetryAfter(tt.in, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	f.Add("120")
	f.Add("Wed, 21 Oct 2015 07:28:00 GMT")
	f.Add("99999999999999999999")
	f.Fuzz(func(t *testing.T, v string) {
		d, _ := ParseRetryAfter(v, time.Now())
		if d < 0 {
			t.Fatalf("negative wait %v for %q", d, v)
		}
	})
}
