package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/idemsync/idemsync/internal/jsontext"
)

// DownstreamKey is the idempotency key to send to the API that does the
// side effect (Stripe's Idempotency-Key, PayPal's PayPal-Request-Id):
// derived from the namespace and key alone, so every attempt of a unit
// sends the same one and an API that honours it applies the unit once
// (docs/ledger.md, "The downstream key"). 45 ASCII characters: within
// Stripe's 255 and PayPal's 108.
func DownstreamKey(ns, key string) string {
	sum := sha256.Sum256([]byte("idemsync/ledger/v1\x00" + ns + "\x00" + key))
	return "idem_" + hex.EncodeToString(sum[:20])
}

// Derive returns a stable key for the event from (a JSON object): the hex
// SHA-256 of the canonical JSON of the fields named (dot paths into
// nested objects), or of the whole object when fields is empty. Choose
// the fields that define the unit of work (an order's id and the action),
// never those of its delivery (a webhook's timestamp, a retry count):
// docs/ledger.md, "Choosing a key".
func Derive(from []byte, fields []string) (key, canonical string, err error) {
	if len(fields) == 0 {
		c, err := Canonical(from)
		if err != nil {
			return "", "", err
		}
		return sum(c), string(c), nil
	}
	if err := jsontext.Check(from); err != nil { // before decoding reads it as U+FFFD
		return "", "", fmt.Errorf("--from: %v", err)
	}
	var obj map[string]any
	dec := json.NewDecoder(strings.NewReader(string(from)))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return "", "", fmt.Errorf("--from is not a JSON object")
	}
	picked := map[string]any{}
	for _, f := range fields {
		v, ok := lookup(obj, f)
		if !ok {
			return "", "", fmt.Errorf("--from has no field %q", f)
		}
		picked[f] = v
	}
	raw, err := json.Marshal(picked)
	if err != nil {
		return "", "", err
	}
	c, err := Canonical(raw)
	if err != nil {
		return "", "", err
	}
	return sum(c), string(c), nil
}

func lookup(obj map[string]any, path string) (any, bool) {
	var cur any = obj
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
