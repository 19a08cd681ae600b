package auth

import (
	"context"
	"net/http"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile/spec"
	idsync "github.com/idemsync/idemsync/sync"
)

// wrapper builds the RoundTripper wrapper of one source.auth block.
type wrapper func(ctx context.Context, a *spec.Auth, red *idsync.Redactor, o Options) (func(http.RoundTripper) http.RoundTripper, error)

// wrappers holds, for every source.auth type, how its requests are
// authenticated. The loader's table of the same types (jobfile/auth_types.go:
// keys, secrets, checks) has already filled and checked the block;
// TestWrappersComplete holds both to idsync.AuthTypes, and TestSecretsOnTheWire
// proves that every credential a type sends is a registered secret.
var wrappers = map[string]wrapper{
	idsync.AuthBearer: func(_ context.Context, a *spec.Auth, _ *idsync.Redactor, _ Options) (func(http.RoundTripper) http.RoundTripper, error) {
		return headerAuth("Authorization", "Bearer "+a.Token), nil
	},
	idsync.AuthBasic: func(_ context.Context, a *spec.Auth, _ *idsync.Redactor, _ Options) (func(http.RoundTripper) http.RoundTripper, error) {
		return basicAuth(a.Username, a.Password), nil
	},
	idsync.AuthAPIKey: func(_ context.Context, a *spec.Auth, _ *idsync.Redactor, _ Options) (func(http.RoundTripper) http.RoundTripper, error) {
		if a.In == "query" {
			return queryAuth(a.Name, a.Value), nil
		}
		return headerAuth(a.Name, a.Value), nil
	},
	idsync.AuthClientCredentials: func(_ context.Context, a *spec.Auth, red *idsync.Redactor, _ Options) (func(http.RoundTripper) http.RoundTripper, error) {
		return refreshWith(a, func(base http.RoundTripper) credential { return newClientCredentials(a, base, red) }), nil
	},
	idsync.AuthRefreshToken: func(_ context.Context, a *spec.Auth, red *idsync.Redactor, o Options) (func(http.RoundTripper) http.RoundTripper, error) {
		if o.Store == nil {
			return nil, &contract.Error{Class: contract.Permanent, Msg: "auth oauth2_refresh_token needs the state file"}
		}
		if o.Keyring == nil {
			o.Keyring = NewKeyring()
		}
		return refreshWith(a, func(base http.RoundTripper) credential { return newRefreshToken(a, base, red, o) }), nil
	},
	idsync.AuthCommand: func(_ context.Context, a *spec.Auth, red *idsync.Redactor, _ Options) (func(http.RoundTripper) http.RoundTripper, error) {
		return refreshWith(a, func(http.RoundTripper) credential { return newCommand(a, red) }), nil
	},
}

// refreshWith wraps a transport in a credential that is fetched again once
// on a 401.
func refreshWith(a *spec.Auth, cred func(base http.RoundTripper) credential) func(http.RoundTripper) http.RoundTripper {
	return func(base http.RoundTripper) http.RoundTripper {
		return &refreshing{base: base, src: cred(base), kind: a.Type}
	}
}
