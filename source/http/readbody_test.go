package httpsource

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"
	"testing/iotest"
)

// readBody returns what io.ReadAll(io.LimitReader(r, limit+1)) returns,
// whatever the announced length says: right, too short, too long,
// unknown, beyond the limit; in small reads; cut by an error.
func TestReadBodyMatchesReadAll(t *testing.T) {
	body := bytes.Repeat([]byte(`{"id":1,"name":"x"},`), 1000) // 20,000 bytes
	n := int64(len(body))
	for _, limit := range []int64{n, n - 1, n + 1, 100, 1 << 20} {
		for _, length := range []int64{-1, 0, 1, n / 2, n - 1, n, n + 1, 2 * n, 1 << 40} {
			for _, small := range []bool{false, true} {
				name := fmt.Sprintf("limit %d length %d small reads %t", limit, length, small)
				src := func() io.Reader {
					var r io.Reader = bytes.NewReader(body)
					if small {
						r = iotest.HalfReader(r)
					}
					return r
				}
				want, werr := io.ReadAll(io.LimitReader(src(), limit+1))
				got, gerr := readBody(src(), length, limit)
				if !bytes.Equal(got, want) || !errors.Is(gerr, werr) && gerr != werr {
					t.Errorf("%s: %d bytes, %v; io.ReadAll: %d bytes, %v", name, len(got), gerr, len(want), werr)
				}
			}
		}
	}
	boom := errors.New("connection reset")
	r := io.MultiReader(bytes.NewReader(body[:500]), iotest.ErrReader(boom))
	if got, err := readBody(r, n, 1<<20); !errors.Is(err, boom) || !bytes.Equal(got, body[:500]) {
		t.Errorf("cut short: %d bytes, %v", len(got), err)
	}
}

// A body whose length the response announces is read into one buffer of
// that size (io.ReadAll grows its buffer from 512 bytes: 20 allocations
// and a copy of about twice the body for a page of 200 KB; docs/performance.md,
// "Round four"). Failed first with 20 allocations.
func TestReadBodyAllocatesOnceForAnnouncedLength(t *testing.T) {
	body := bytes.Repeat([]byte(`{"id":1,"name":"x"},`), 10_000) // 200,000 bytes
	r := bytes.NewReader(body)
	allocs := testing.AllocsPerRun(20, func() {
		r.Reset(body)
		got, err := readBody(r, int64(len(body)), 64<<20)
		if err != nil || len(got) != len(body) {
			t.Fatalf("%d bytes, %v", len(got), err)
		}
	})
	if allocs > 2 {
		t.Errorf("reading a body of announced length: %.0f allocations, want at most 2 (the buffer and the limit)", allocs)
	}
}
