// Command hello is the floor of any process the ledger's caller starts: a
// Go program that prints one line. `go run ./bench -ledger` times it
// beside `idemsync key` (docs/ledger.md, "Speed").
package main

import "os"

func main() { os.Stdout.WriteString(`{"status":"acquired"}` + "\n") }
