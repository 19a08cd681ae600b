package checkpoint

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
)

// keysFormat is the first byte of an encoded key list. It also keeps an
// empty list from being an empty value, which reads back as NULL.
const keysFormat = 1

// encodeKeys packs a page's keys into one value: a format byte, then each
// key as its length (uvarint) and its bytes, so any byte may occur in a
// key. nil gives nil (SQL NULL: not recorded).
func encodeKeys(keys []string) []byte {
	if keys == nil {
		return nil
	}
	b := make([]byte, 1, 1+8*len(keys))
	b[0] = keysFormat
	for _, k := range keys {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
	}
	return b
}

// decodeKeys calls fn with every key encodeKeys packed into b.
func decodeKeys(b []byte, fn func(string) error) error {
	if len(b) == 0 || b[0] != keysFormat {
		return errors.New("unknown key list format")
	}
	for b = b[1:]; len(b) > 0; {
		n, w := binary.Uvarint(b)
		if w <= 0 || uint64(len(b)-w) < n {
			return errors.New("corrupt key list")
		}
		if err := fn(string(b[w : w+int(n)])); err != nil {
			return err
		}
		b = b[w+int(n):]
	}
	return nil
}

// SeenKeys calls fn with the key of every row of every page committed to
// runID, over all the invocations the run spanned, in page order (a key on
// two pages comes twice). complete is false when a page of the run was
// committed without its keys: such a set must not decide a deletion.
func (s *Store) SeenKeys(ctx context.Context, runID int64, fn func(key string) error) (complete bool, err error) {
	op := fmt.Sprintf("run %d: read seen keys", runID)
	rows, err := s.db.QueryContext(ctx, `SELECT seq, keys FROM pages WHERE run_id = ? ORDER BY seq`, runID)
	if err != nil {
		return false, s.wrap(op, err)
	}
	defer rows.Close()
	complete = true
	for rows.Next() {
		var seq int64
		var b []byte
		if err := rows.Scan(&seq, &b); err != nil {
			return false, s.wrap(op, err)
		}
		if b == nil {
			complete = false
			continue
		}
		if err := decodeKeys(b, fn); err != nil {
			return false, s.wrap(op, fmt.Errorf("page %d: %w", seq, err))
		}
	}
	if err := rows.Err(); err != nil {
		return false, s.wrap(op, err)
	}
	return complete, nil
}
