//go:build unix && !linux

package server

import "syscall"

// procAttr puts the server in its own process group.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
