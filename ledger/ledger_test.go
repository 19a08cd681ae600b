package ledger

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
)

func TestCanonical(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"b":1, "a":[true,null,"x"]}`, `{"a":[true,null,"x"],"b":1}`},
		// Numbers as ECMAScript prints them (RFC 8785, 3.2.2.3).
		{`[4.50, 2e-3, 0.000001, 1e-7, 1e21, 1e20, -0, 1E30, 333333333.33333329, 5e-324, 100, 1.0, -12.5e1]`,
			`[4.5,0.002,0.000001,1e-7,1e+21,100000000000000000000,0,1e+30,333333333.3333333,5e-324,100,1,-125]`},
		// Names sorted by UTF-16 code units: U+1F600 (D83D DE00) before U+FB33.
		{`{"\ufb33":1,"\ud83d\ude00":2,"\u20ac":3,"\u00f6":4,"\u0080":5,"1":6,"\r":7}`,
			"{\"\\r\":7,\"1\":6,\"\u0080\":5,\"ö\":4,\"€\":3,\"😀\":2,\"דּ\":1}"},
		// Only the escapes JSON requires; "/" and non-ASCII stay as they are.
		{`"a/b\u00e9\u0001\n\"\\"`, `"a/bé\u0001\n\"\\"`},
	} {
		got, err := Canonical([]byte(c.in))
		if err != nil {
			t.Fatalf("Canonical(%s): %v", c.in, err)
		}
		if string(got) != c.want {
			t.Errorf("Canonical(%s)\n got %s\nwant %s", c.in, got, c.want)
		}
	}
	for _, bad := range []string{``, `{`, `{"a":1} {"b":2}`, `1e999`, `nul`, `{"to":"x","to":"y"}`, `{"a":{"b":1,"\u0062":2}}`} {
		if _, err := Canonical([]byte(bad)); err == nil {
			t.Errorf("Canonical(%q) accepted", bad)
		}
	}
}

func TestFingerprintSameMeaning(t *testing.T) {
	a, _ := Fingerprint([]byte(`{"amount": 100, "to": "a@x", "tags": ["x", "y"]}`))
	b, _ := Fingerprint([]byte(`{"tags":["x","y"],"to":"a@x","amount":1.00e2}`))
	c, _ := Fingerprint([]byte(`{"tags":["y","x"],"to":"a@x","amount":100}`))
	if a != b || len(a) != 64 {
		t.Fatalf("same parameters, fingerprints %s and %s", a, b)
	}
	if a == c {
		t.Fatal("array order changed and the fingerprint did not")
	}
}

func TestDerive(t *testing.T) {
	ev := `{"order":{"id":42,"action":"charge"},"delivered_at":"2025-01-01T00:00:00Z","attempt":3}`
	redelivered := `{"attempt":4,"delivered_at":"2025-01-01T00:05:00Z","order":{"action":"charge","id":42.0}}`
	k1, c1, err := Derive([]byte(ev), []string{"order.id", "order.action"})
	if err != nil {
		t.Fatal(err)
	}
	k2, _, _ := Derive([]byte(redelivered), []string{"order.action", "order.id"})
	if k1 != k2 {
		t.Fatalf("a redelivery of the same event derived another key: %s vs %s", k1, k2)
	}
	if c1 != `{"order.action":"charge","order.id":42}` {
		t.Errorf("canonical %s", c1)
	}
	whole1, _, _ := Derive([]byte(ev), nil)
	whole2, _, _ := Derive([]byte(redelivered), nil)
	if whole1 == whole2 {
		t.Error("the whole event's key ignored its delivery fields")
	}
	if _, _, err := Derive([]byte(ev), []string{"order.total"}); err == nil || !strings.Contains(err.Error(), "order.total") {
		t.Errorf("missing field: %v", err)
	}
}

func TestDownstreamKey(t *testing.T) {
	a := DownstreamKey("stripe", "inv-1")
	if a != DownstreamKey("stripe", "inv-1") || len(a) != 45 || !strings.HasPrefix(a, "idem_") {
		t.Fatalf("downstream key %q", a)
	}
	for _, other := range []string{DownstreamKey("stripe", "inv-2"), DownstreamKey("paypal", "inv-1"), DownstreamKey("stripe\x00inv", "-1")} {
		if other == a {
			t.Fatalf("two units share the downstream key %s", a)
		}
	}
}

func TestClaimRequestChecks(t *testing.T) {
	r, err := Claim{Key: "k", Params: []byte(`{"a":1}`), TTL: "30s"}.Request()
	if err != nil || r.NS != DefaultNS || r.TTL.String() != "30s" || len(r.Token) != 32 || len(r.Fingerprint) != 64 {
		t.Fatalf("Request: %+v %v", r, err)
	}
	r2, _ := Claim{Key: "k"}.Request()
	if r2.Token == r.Token || r2.TTL != DefaultTTL {
		t.Fatalf("second request: %+v", r2)
	}
	for _, c := range []struct {
		claim Claim
		want  string
	}{
		{Claim{}, "key is empty"},
		{Claim{Key: strings.Repeat("x", 256)}, "256 bytes"},
		{Claim{Key: "a\x00b"}, "NUL"},
		{Claim{Key: "\xff"}, "UTF-8"},
		{Claim{Key: "k", NS: strings.Repeat("n", 300)}, "namespace"},
		{Claim{Key: "k", TTL: "soon"}, "ttl"},
		{Claim{Key: "k", TTL: "-1s"}, "ttl"},
		// Below the millisecond leases are kept in: both stores kept 0 ms,
		// which a heartbeat renewed by; PostgreSQL's lease ended at its
		// claim, SQLite's nanoseconds later.
		{Claim{Key: "k", TTL: "1ns"}, "at least 1ms"},
		{Claim{Key: "k", TTL: "999us"}, "at least 1ms"},
		{Claim{Key: "k", OnExpired: "ignore"}, "on-expired"},
		{Claim{Key: "k", Params: []byte(`{`)}, "params"},
		{Claim{Key: "k", Fingerprint: "xyz"}, "fingerprint"},
		{Claim{Key: "k", Params: []byte(`1`), Fingerprint: "ab"}, "not both"},
	} {
		_, err := c.claim.Request()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Request(%+v): %v, want an error saying %q", c.claim, err, c.want)
			continue
		}
		var ce *contract.Error
		if !errors.As(err, &ce) || ce.Class != contract.Invalid {
			t.Errorf("Request(%+v): %v is not invalid usage", c.claim, err)
		}
	}
}

// JSON text whose strings encoding/json would not read back as written —
// bytes that are not UTF-8, a lone UTF-16 surrogate escape — is refused:
// both read as U+FFFD, so two different parameter sets (or events) would
// have one fingerprint (or derived key), and a claim with the other's
// parameters would replay its result instead of answering mismatch.
func TestCanonicalRefusesWhatDecodesAsAnother(t *testing.T) {
	for _, twins := range [][2]string{
		{"{\"to\":\"M\xfcller\"}", "{\"to\":\"M\xe4ller\"}"}, // Latin-1, not UTF-8
		{`{"to":"x\ud800"}`, `{"to":"x\udbff"}`},             // lone high surrogates
		{`{"to":"x\udc00"}`, `{"to":"x\udfff"}`},             // lone low surrogates
		{`{"x\ud800":1}`, `{"x\udbff":1}`},                   // in a name
		{`{"to":"\ud83d\u0041"}`, `{"to":"\ud83e\u0041"}`},   // high followed by no low
	} {
		for _, in := range twins {
			if fp, err := Fingerprint([]byte(in)); err == nil {
				t.Errorf("Fingerprint(%q) = %s, want an error", in, fp)
			}
			if k, _, err := Derive([]byte(in), nil); err == nil {
				t.Errorf("Derive(%q) = %s, want an error", in, k)
			}
			if k, _, err := Derive([]byte(`{"id":1,"x":`+in+`}`), []string{"id", "x"}); err == nil {
				t.Errorf("Derive(%q, fields) = %s, want an error", in, k)
			}
		}
	}
	// A surrogate pair, escaped or not, and U+FFFD itself are text.
	for _, in := range []string{`"\ud83d\ude00"`, `"😀"`, `"\ufffd"`, "\"\uFFFD\"", `"\\ud800"`} {
		if _, err := Canonical([]byte(in)); err != nil {
			t.Errorf("Canonical(%s): %v", in, err)
		}
	}
}

// A fingerprint is hex, so its case carries nothing: a unit claimed with
// `--fingerprint ABC123` and claimed again with `abc123` (one tool prints
// upper case, another lower) is the same unit, not `mismatch`; a stored
// upper-case fingerprint (written before fingerprints were kept in lower
// case) still matches (docs/ledger.md, "Fingerprints").
func TestFingerprintCaseIsNotAMismatch(t *testing.T) {
	r, err := Claim{Key: "k", Fingerprint: "ABC123"}.Request()
	if err != nil {
		t.Fatal(err)
	}
	if r.Fingerprint != "abc123" {
		t.Errorf("stored fingerprint %q, want abc123", r.Fingerprint)
	}
	now := time.Now()
	for _, c := range []struct {
		stored, claimed string
		mismatch        bool
	}{
		{"ABC123", "abc123", false},
		{"abc123", "abc123", false},
		{"abc123", "abc124", true},
		{"ABC123", "abc124", true},
	} {
		cur := &contract.LedgerEntry{NS: "default", Key: "k", Status: contract.LedgerCompleted, Fingerprint: c.stored, UpdatedAt: now}
		out, _ := contract.Decide(cur, contract.ClaimRequest{NS: "default", Key: "k", Fingerprint: c.claimed, Token: "t", TTL: time.Minute}, now)
		if got := out.Status == contract.StatusMismatch; got != c.mismatch {
			t.Errorf("stored %q, claimed %q: status %s, want mismatch=%v", c.stored, c.claimed, out.Status, c.mismatch)
		}
	}
}
