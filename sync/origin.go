package sync

import (
	"net"
	"net/url"
	"strings"
)

// Origin returns u's origin as scheme://host[:port], lower case, without
// the scheme's default port: "HTTPS://API.example.com:443/x" and
// "https://api.example.com" are one origin (docs/job-file.md,
// source.follow_origins).
func Origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if scheme == "http" && port == "80" || scheme == "https" && port == "443" {
		port = ""
	}
	if port != "" {
		host = net.JoinHostPort(host, port)
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return scheme + "://" + host
}
