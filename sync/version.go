package sync

// Version, Commit and Date are stamped at build time with -ldflags -X.
var (
	Version = "dev"
	Commit  = "none"
	Date    = "unknown"
)
