//go:build !unix

package auth

import "os/exec"

// ownGroup leaves cmd as it is: without process groups only the command
// itself is killed when its context ends (WaitDelay still bounds the wait).
func ownGroup(*exec.Cmd) {}

func killGroup(*exec.Cmd) {}
