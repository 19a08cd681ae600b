package jobfile

import (
	"encoding/base64"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/jobfile/spec"
	idsync "github.com/idemsync/idemsync/sync"
)

// authKeys says, for every key of source.auth, whether its value is a
// secret (docs/job-file.md, "What is and is not a secret"). A key added to
// spec.Auth without an entry here fails TestAuthSecretsRegistered.
var authKeys = map[string]bool{
	"type": false, "token": true, "username": false, "password": true, "name": false, "value": true, "in": false,
	"token_url": false, "client_id": false, "client_secret": true, "scopes": false, "auth_style": false,
	"refresh_token": true, "run": false, "header": false, "prefix": false, "ttl": false,
}

// authBlocks is, for every auth type, a block that sets every key the type
// takes, each with a distinct literal value.
var authBlocks = map[string]map[string]string{
	idsync.AuthBearer:            {"token": "tok-Zq7Vx3Kp"},
	idsync.AuthBasic:             {"username": "alice-user", "password": "pw-Wm2Rt8Ln"},
	idsync.AuthAPIKey:            {"name": "X-Api-Key", "value": "ak-Hs6Jd4Qa", "in": "header"},
	idsync.AuthClientCredentials: {"token_url": "https://auth.example.com/token", "client_id": "client-one", "client_secret": "cs-Bn5Mc1Xe", "auth_style": "header"},
	idsync.AuthRefreshToken:      {"token_url": "https://auth.example.com/token", "client_id": "client-two", "client_secret": "cs-Yt3Gf9Uk", "refresh_token": "rt-Pl0Oi8Kj"},
	idsync.AuthCommand:           {"run": "[print-token, --profile, prod-ro]", "header": "X-Token", "prefix": "Token ", "ttl": "1m"},
}

// Every secret key of every auth type is registered with the job's
// redactor, as written in the file (literals, not ${VAR}s, which are
// secrets anyway); the keys that are not secrets are not. Basic
// credentials are registered in the form they are sent in too.
func TestAuthSecretsRegistered(t *testing.T) {
	for _, f := range reflect.VisibleFields(reflect.TypeOf(spec.Auth{})) {
		k, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if _, ok := authKeys[k]; !ok {
			t.Errorf("source.auth.%s is not in authKeys: say whether it is a secret (and register it if so)", k)
		}
	}
	for _, typ := range idsync.AuthTypes {
		block, ok := authBlocks[typ]
		if !ok {
			t.Errorf("auth type %s has no block in authBlocks", typ)
			continue
		}
		t.Run(typ, func(t *testing.T) {
			var b strings.Builder
			for _, k := range slices.Sorted(maps.Keys(block)) {
				v := block[k]
				if !strings.HasPrefix(v, "[") {
					v = fmt.Sprintf("%q", v)
				}
				fmt.Fprintf(&b, "    %s: %s\n", k, v)
			}
			yml := fmt.Sprintf("name: j\nsource:\n  url: https://api.example.com/v1/items\n  auth:\n    type: %s\n%starget: {url: \"sqlite:out.db\", table: items, key: [id]}\n", typ, b.String())
			job, err := Load([]byte(yml), filepath.Join(t.TempDir(), "job.yaml"), env(nil))
			if err != nil {
				t.Fatalf("%v\n%s", err, yml)
			}
			for k, v := range block {
				if strings.HasPrefix(v, "[") {
					continue
				}
				got := job.Secrets.Redact("sent " + v + " once")
				if redacted := got != "sent "+v+" once"; redacted != authKeys[k] {
					t.Errorf("source.auth.%s (%q): redacted %v, want %v: %s", k, v, redacted, authKeys[k], got)
				}
			}
			if typ == idsync.AuthBasic {
				basic := base64.StdEncoding.EncodeToString([]byte(block["username"] + ":" + block["password"]))
				if got := job.Secrets.Redact("Basic " + basic); strings.Contains(got, basic) {
					t.Errorf("the Basic credentials are not registered: %s", got)
				}
			}
		})
	}
}

// What is a secret: ${VAR}s in source.url, query, headers, body and auth;
// literal values of credential headers; URL passwords. What is not: a
// ${VAR} in the target (a path, a table name: only the URL's password is),
// in records or pagination; a literal header that names no credential.
func TestWhatIsASecret(t *testing.T) {
	yml := `name: j
source:
  url: https://api.example.com/${VERSION}/items
  records: ${RECORDS}
  headers: {Accept: application/vnd.api+json, X-Api-Key: literal-key-Vb7, X-Trace: "${TRACE}", Authorization: "Bearer ${TOKEN}"}
  query: {api_key: "${QKEY}", region: "${REGION}"}
pagination: {style: page, size: 50, size_param: "${SIZEP}"}
target: {url: "postgres://app:${DBPW}@${DBHOST}/${DB}", table: "${TABLE}", key: [id]}
`
	vars := map[string]string{"VERSION": "v1-Jk8", "RECORDS": "data", "TRACE": "trace-Lm2", "TOKEN": "tok-Np4",
		"QKEY": "qk-Rs6", "REGION": "eu-west", "SIZEP": "per_page", "DBPW": "dbpw-Tu8", "DBHOST": "dbhost", "DB": "warehouse", "TABLE": "items"}
	job, err := Load([]byte(yml), filepath.Join(t.TempDir(), "job.yaml"), env(vars))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"v1-Jk8", "literal-key-Vb7", "trace-Lm2", "tok-Np4", "Bearer tok-Np4", "qk-Rs6", "eu-west", "dbpw-Tu8"} {
		if got := job.Secrets.Redact("<" + v + ">"); got != "<"+idsync.Redacted+">" {
			t.Errorf("%q is a secret: %s", v, got)
		}
	}
	for _, v := range []string{"data", "application/vnd.api+json", "per_page", "dbhost", "warehouse", "items"} {
		if got := job.Secrets.Redact("<" + v + ">"); got != "<"+v+">" {
			t.Errorf("%q is not a secret: %s", v, got)
		}
	}
}

// A password in a PostgreSQL URL's query (password=, sslpassword=, the
// client key's passphrase) is a secret like the userinfo's, in the target
// and in the state URL: redacted wherever its value shows, and never kept
// as text in the job's identity, which the state file stores.
func TestURLQueryPasswordsAreSecrets(t *testing.T) {
	for _, tc := range []struct{ name, target, state, secret string }{
		{"target sslpassword", "postgres://app@db.example.com/warehouse?sslpassword=kp-Qw3Er5&sslmode=verify-full", "", "kp-Qw3Er5"},
		{"target password", "postgres://app@db.example.com/warehouse?password=pw-Ty7Ui9", "", "pw-Ty7Ui9"},
		{"target escaped sslpassword", "postgres://app@db.example.com/warehouse?sslpassword=kp%20Zx1%26Cv", "", "kp Zx1&Cv"},
		{"state sslpassword", "sqlite:out.db", "postgres://app@db.example.com/state?sslpassword=st-Gh4Jk6", "st-Gh4Jk6"},
		{"target sslpassword holding ;", "postgres://app@db.example.com/warehouse?sslpassword=kp-Bn8;Mk2", "", "kp-Bn8;Mk2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yml := fmt.Sprintf("name: j\nsource: {url: https://api.example.com/v1/items}\ntarget: {url: %q, table: items, key: [id]}\n", tc.target)
			if tc.state != "" {
				yml += fmt.Sprintf("state: %q\n", tc.state)
			}
			job, err := Load([]byte(yml), filepath.Join(t.TempDir(), "job.yaml"), env(nil))
			if err != nil {
				t.Fatalf("%v\n%s", err, yml)
			}
			if got := job.Secrets.Redact("<" + tc.secret + ">"); got != "<"+idsync.Redacted+">" {
				t.Errorf("%q is not redacted: %s", tc.secret, got)
			}
			for _, shown := range []string{job.Identity().Encode(), job.Secrets.Redact(tc.target + " " + tc.state)} {
				for _, part := range strings.Fields(tc.secret) {
					if strings.Contains(shown, part) {
						t.Errorf("part %q of the password shows in %s", part, shown)
					}
				}
			}
		})
	}
}

// A ${VAR} secret that the file joins to a word character (tok_${TOKEN},
// /acct${ID}/, pw${DBPW}) is redacted with the word it is part of: the
// redactor matches whole words only, so the value alone was never found,
// and the query value was kept as text in the job's identity.
func TestSecretJoinedToAWord(t *testing.T) {
	yml := "name: j\nsource:\n  url: https://api.example.com/v1/acct${ACCT}/items\n  query: {token: \"tok_${TOK}\"}\n  headers: {X-Trace: \"t${HDR}\"}\ntarget: {url: \"postgres://app:pw${DBPW}@db/x\", table: items, key: [id]}\n"
	vars := map[string]string{"ACCT": "Acct9Zk4", "TOK": "Tok9Zk4", "HDR": "Hdr9Zk4", "DBPW": "Db9Zk4"}
	job, err := Load([]byte(yml), filepath.Join(t.TempDir(), "job.yaml"), env(vars))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"GET https://api.example.com/v1/acctAcct9Zk4/items?token=tok_Tok9Zk4",
		`{"echo":"tok_Tok9Zk4","trace":"tHdr9Zk4"}`,
		"postgres://app:pwDb9Zk4@db/x",
		job.Identity().Encode(),
	} {
		got := job.Secrets.Redact(s)
		for _, v := range vars {
			if strings.Contains(got, v) {
				t.Errorf("%s shows in %s", v, got)
			}
		}
	}
	if id := job.Identity().Encode(); strings.Contains(id, "Tok9Zk4") || strings.Contains(id, "Acct9Zk4") {
		t.Errorf("the identity keeps a secret as text: %s", id)
	}
	// A word that merely begins like a value is left alone.
	if got := job.Secrets.Redact("account tokens"); got != "account tokens" {
		t.Errorf("ordinary words changed: %s", got)
	}
}
