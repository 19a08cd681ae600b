package httpsource

import "io"

// readBody reads r to its end, at most limit+1 bytes, as
// io.ReadAll(io.LimitReader(r, limit+1)) does, into one buffer of the
// body's announced length (its Content-Length; <= 0 when unknown) when
// there is one. io.ReadAll grows its buffer from 512 bytes: for a page of
// 200 KB, 20 allocations and copies of about twice the body, garbage the
// collector and the scavenger then return (docs/performance.md, "Round
// four"). A body longer than announced grows the buffer as append does.
func readBody(r io.Reader, length, limit int64) ([]byte, error) {
	if length <= 0 {
		return io.ReadAll(io.LimitReader(r, limit+1))
	}
	buf := make([]byte, 0, min(length, limit)+1) // +1: io.EOF is read into room to spare
	left := limit + 1
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		room := buf[len(buf):cap(buf)]
		if int64(len(room)) > left {
			room = room[:left]
		}
		n, err := r.Read(room)
		buf, left = buf[:len(buf)+n], left-int64(n)
		if err == io.EOF || left == 0 && err == nil {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}
