package jobfile

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/jobfile/spec"
	idsync "github.com/idemsync/idemsync/sync"
)

// The table holds exactly the types of the enum, names only keys of
// spec.Auth, and every key but type is taken by some type (a key no
// type takes could never be set).
func TestAuthTableComplete(t *testing.T) {
	if got, want := slices.Sorted(maps.Keys(authTable)), slices.Sorted(slices.Values(idsync.AuthTypes)); !slices.Equal(got, want) {
		t.Errorf("authTable has types %v, idsync.AuthTypes %v", got, want)
	}
	fields := authFields(&spec.Auth{})
	taken := map[string]bool{}
	for typ, at := range authTable {
		for _, k := range at.keys {
			if _, ok := fields[k.name]; !ok {
				t.Errorf("%s takes %s, which is not a key of source.auth", typ, k.name)
			}
			taken[k.name] = true
		}
	}
	for k := range fields {
		if k != "type" && !taken[k] {
			t.Errorf("source.auth.%s is taken by no auth type in authTable", k)
		}
	}
}

// anyValue is a valid value of every key of source.auth, to set it where
// its type does not take it.
var anyValue = map[string]string{
	"token": "t-123", "username": "u", "password": "p-123", "name": "X-K", "value": "v-123", "in": "header",
	"token_url": "https://auth.example.com/token", "client_id": "c", "client_secret": "s-123", "scopes": "[a]",
	"auth_style": "header", "refresh_token": "r-123", "run": "[print-token]", "header": "X-T", "prefix": `"T "`, "ttl": "1m",
}

// Every type refuses each key it does not take, naming the key and the
// type, and accepts the block of every key it takes (authBlocks).
func TestAuthUnusedKeysRefused(t *testing.T) {
	fields := authFields(&spec.Auth{})
	for _, typ := range idsync.AuthTypes {
		for _, k := range slices.Sorted(maps.Keys(fields)) {
			if k == "type" || authTable[typ].takes(k) {
				continue
			}
			v, ok := anyValue[k]
			if !ok {
				t.Fatalf("source.auth.%s has no value in anyValue", k)
			}
			var b strings.Builder
			for _, bk := range slices.Sorted(maps.Keys(authBlocks[typ])) {
				bv := authBlocks[typ][bk]
				if !strings.HasPrefix(bv, "[") {
					bv = fmt.Sprintf("%q", bv)
				}
				fmt.Fprintf(&b, "    %s: %s\n", bk, bv)
			}
			yml := fmt.Sprintf("name: j\nsource:\n  url: https://api.example.com/v1/items\n  auth:\n    type: %s\n%s    %s: %s\ntarget: {url: \"sqlite:out.db\", table: items, key: [id]}\n", typ, b.String(), k, v)
			_, err := Load([]byte(yml), filepath.Join(t.TempDir(), "job.yaml"), env(nil))
			want := fmt.Sprintf("source.auth.%s: is not used with auth type %s", k, typ)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s with %s: got %v, want %q", typ, k, err, want)
			}
		}
	}
}
