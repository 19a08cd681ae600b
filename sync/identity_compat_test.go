package sync

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// A value stored hashed by an older binary (every ${VAR} was a secret) is
// the same walk as its plain value now; another value still changes it.
func TestIdentityHashedBeforeIsSame(t *testing.T) {
	sum := sha256.Sum256([]byte("pagination.size\x00" + "50"))
	old := Identity{"pagination.size": secretPrefix + hex.EncodeToString(sum[:12])}
	if got := (Identity{"pagination.size": "50"}).Changes(old); got != nil {
		t.Errorf("the same value, once hashed: changes %q", got)
	}
	if got := (Identity{"pagination.size": "100"}).Changes(old); len(got) != 1 || got[0] != "pagination.size: changed" {
		t.Errorf("another value: changes %q", got)
	}
}

// A value stored as text by an older binary that hashes it now (a target
// URL's sslpassword=, a secret since) is the same walk; another value
// still changes it.
func TestIdentityHashedNowIsSame(t *testing.T) {
	const key, v = "target.url", "postgres://app@db/x?sslpassword=kp-Qw3Er5"
	sum := sha256.Sum256([]byte(key + "\x00" + v))
	now := Identity{key: secretPrefix + hex.EncodeToString(sum[:12])}
	if got := now.Changes(Identity{key: v}); got != nil {
		t.Errorf("the same value, now hashed: changes %q", got)
	}
	if got := now.Changes(Identity{key: v + "2"}); len(got) != 1 || got[0] != key+": changed" {
		t.Errorf("another value: changes %q", got)
	}
}
