//go:build unix

package auth

import (
	"os/exec"
	"syscall"
)

// ownGroup runs cmd in a new process group, killed as a whole when the
// command's context ends.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroupOf(cmd) }
}

// killGroup kills what is left of cmd's process group.
func killGroup(cmd *exec.Cmd) { _ = killGroupOf(cmd) }

func killGroupOf(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
