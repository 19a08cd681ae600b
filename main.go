// Command idemsync copies a paginated HTTP/JSON API into a SQL table so that
// any run may be killed, retried, resumed, overlapped or replayed.
package main

import (
	"os"

	"github.com/idemsync/idemsync/cmd"
)

func main() { os.Exit(withProfile(cmd.Main)) }
