package sync

import (
	"time"
)

// Auth types of source.auth.type (docs/job-file.md, "Auth").
const (
	AuthBearer            = "bearer"
	AuthBasic             = "basic"
	AuthAPIKey            = "api_key"
	AuthClientCredentials = "oauth2_client_credentials"
	AuthRefreshToken      = "oauth2_refresh_token"
	AuthCommand           = "command"
)

// DefaultAuthCommandTTL is how long a command's token is reused.
const DefaultAuthCommandTTL = 5 * time.Minute

// AuthTypes lists the source.auth types.
var AuthTypes = []string{AuthBearer, AuthBasic, AuthAPIKey, AuthClientCredentials, AuthRefreshToken, AuthCommand}
