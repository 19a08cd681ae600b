package paging

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Mark formats (incremental.format; docs/job-file.md, "Marks are sent as the
// API wrote them").
const (
	FormatAsReceived = "as_received" // the form the API used (default)
	FormatRFC3339    = "rfc3339"     // 2024-01-01T00:00:00Z, in UTC, whole seconds
	FormatDate       = "date"        // 2024-01-01, in UTC
	FormatUnix       = "unix"        // seconds since 1970
	FormatUnixMS     = "unix_ms"     // milliseconds since 1970
)

// CheckMarkFormat accepts the named formats and Go layouts that write a
// year and parse back what they wrote.
func CheckMarkFormat(f string) error {
	switch f {
	case FormatAsReceived, FormatRFC3339, FormatDate, FormatUnix, FormatUnixMS:
		return nil
	}
	ref := time.Date(2024, 3, 9, 17, 4, 5, 0, time.UTC)
	if strings.Contains(f, "2006") {
		if _, err := time.Parse(f, ref.Format(f)); err == nil {
			return nil
		}
	}
	return fmt.Errorf("%q is not as_received, rfc3339, date, unix, unix_ms or a Go time layout that writes the year (e.g. 2006-01-02T15:04:05Z07:00)", f)
}

// FormatMark returns mark as it is sent to the API under format:
// as_received sends it verbatim; rfc3339, date and Go layouts write a
// timestamp in UTC; unix and unix_ms its seconds or milliseconds since
// 1970 (a numeric mark is sent as it is). Every form rounds down, so a
// since-window never starts later than the mark. It returns an error for
// a numeric mark under a timestamp format.
func FormatMark(mark, format string) (string, error) {
	if mark == "" || format == "" || format == FormatAsReceived {
		return mark, nil
	}
	t, ok := ParseTime(mark)
	if !ok {
		if IsDecimal(mark) && (format == FormatUnix || format == FormatUnixMS) {
			return mark, nil
		}
		return "", fmt.Errorf("mark %q is not a timestamp, so incremental.format %s cannot write it", Elide(mark, 40), format)
	}
	t = t.UTC()
	switch format {
	case FormatUnix:
		return strconv.FormatInt(t.Unix(), 10), nil
	case FormatUnixMS:
		return strconv.FormatInt(t.UnixMilli(), 10), nil
	case FormatRFC3339:
		return t.Format(time.RFC3339), nil
	case FormatDate:
		return t.Format(time.DateOnly), nil
	}
	return t.Format(format), nil
}

// FormatLike writes t in the form of sample, an RFC 3339 mark: the same
// number of fractional digits (extra precision is cut, which rounds down)
// and the same offset (Z, or sample's numeric offset). A sample that is
// not a timestamp gives RFC 3339 in UTC with nanoseconds trimmed.
func FormatLike(t time.Time, sample string) string {
	st, ok := ParseTime(sample)
	if !ok {
		return t.UTC().Format(time.RFC3339Nano)
	}
	layout := "2006-01-02T15:04:05"
	if len(sample) > 19 && sample[19] == '.' {
		n := 0
		for i := 20; i < len(sample) && sample[i] >= '0' && sample[i] <= '9'; i++ {
			n++
		}
		layout += "." + strings.Repeat("0", n)
	}
	switch last := sample[len(sample)-1]; {
	case last == 'Z' || last == 'z':
		return t.UTC().Format(layout + "Z")
	default:
		return t.In(st.Location()).Format(layout + "-07:00")
	}
}

// FormatEnd returns the upper bound of a window (incremental.end_param) as
// it is sent under format: the smallest value the format writes that is not
// before end, so that the bound sent never ends the window earlier than end
// (a date cut down to its day would leave out the day's records up to end,
// while the saved mark moves to end). as_received and numeric marks are
// sent as they are.
func FormatEnd(end, format string) (string, error) {
	w, err := FormatMark(end, format)
	if err != nil || end == "" || format == "" || format == FormatAsReceived {
		return w, err
	}
	t, ok := ParseTime(end)
	if !ok {
		return w, nil
	}
	back := func(x time.Time) (string, time.Time) {
		s, _ := FormatMark(x.UTC().Format(time.RFC3339Nano), format)
		switch format {
		case FormatUnix, FormatUnixMS:
			n, _ := strconv.ParseInt(s, 10, 64)
			if format == FormatUnix {
				return s, time.Unix(n, 0)
			}
			return s, time.UnixMilli(n)
		case FormatRFC3339:
			p, _ := time.Parse(time.RFC3339, s)
			return s, p
		case FormatDate:
			p, _ := time.Parse(time.DateOnly, s)
			return s, p
		}
		p, _ := time.Parse(format, s)
		return s, p
	}
	s, floor := back(t)
	if !floor.Before(t) {
		return w, nil
	}
	// The format cut end down: step up by growing units until what it
	// writes is at or after end.
	for _, up := range []func(time.Time) time.Time{
		func(x time.Time) time.Time { return x.Add(time.Millisecond) },
		func(x time.Time) time.Time { return x.Add(time.Second) },
		func(x time.Time) time.Time { return x.Add(time.Minute) },
		func(x time.Time) time.Time { return x.Add(time.Hour) },
		func(x time.Time) time.Time { return x.AddDate(0, 0, 1) },
		func(x time.Time) time.Time { return x.AddDate(0, 1, 0) },
		func(x time.Time) time.Time { return x.AddDate(1, 0, 0) },
	} {
		if s2, p := back(up(floor)); !p.Before(t) {
			return s2, nil
		}
	}
	return s, nil
}
