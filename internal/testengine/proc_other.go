//go:build !unix

package testengine

import "os/exec"

func setProcessGroup(*exec.Cmd) {}

func signalGroup(cmd *exec.Cmd, _ bool) {
	_ = cmd.Process.Kill() // an error means it is already gone
}
