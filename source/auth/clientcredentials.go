package auth

import (
	"context"
	"net/http"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/idemsync/idemsync/jobfile/spec"
	idsync "github.com/idemsync/idemsync/sync"
)

// newClientCredentials gets tokens with the OAuth2 client credentials
// grant (RFC 6749 §4.4), cached for their lifetime.
func newClientCredentials(a *spec.Auth, base http.RoundTripper, red *idsync.Redactor) credential {
	cfg := &clientcredentials.Config{
		ClientID:     a.ClientID,
		ClientSecret: a.ClientSecret,
		TokenURL:     a.TokenURL,
		Scopes:       a.Scopes,
		AuthStyle:    authStyle(a.AuthStyle),
	}
	return newTokenCache(red, func(ctx context.Context) (*oauth2.Token, error) {
		tok, err := cfg.Token(exchangeContext(ctx, base))
		if err != nil {
			return nil, classify(a.Type, err)
		}
		return tok, nil
	})
}
