package server

import "syscall"

// procAttr puts the server in its own process group and has the kernel
// kill it when headroom dies (PR_SET_PDEATHSIG).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
