package jobfile

import "strings"

// secretKeys are the blocks of source whose ${VAR} values are secrets:
// they carry credentials (a key in the URL's path or query, a header, a
// GraphQL body's token, every auth key). A ${VAR} anywhere else (a
// target path or table, records, pagination) is configuration, not a
// secret: redacting it would mangle ordinary output. The target URL's
// password is registered on its own (targetDefaults). See docs/job-file.md,
// "What is and is not a secret".
var secretKeys = []string{"source.url", "source.query", "source.headers", "source.body", "source.auth"}

// secretPath reports whether a ${VAR} expanded at path (source.headers.X,
// source.query.k[0]) is a secret.
func secretPath(path string) bool {
	for _, k := range secretKeys {
		if path == k || strings.HasPrefix(path, k+".") || strings.HasPrefix(path, k+"[") {
			return true
		}
	}
	return false
}
