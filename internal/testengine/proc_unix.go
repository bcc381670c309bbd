//go:build unix

package testengine

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the engine in its own process group, so that stopping it stops anything it
// started too.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func signalGroup(cmd *exec.Cmd, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	// The group id is the child's pid (Setpgid); an error means it is already gone.
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}
