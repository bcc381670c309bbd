package clocksync

import (
	"golang.org/x/sys/unix"

	"github.com/headroom-llm/headroom/rundir"
)

// KernelNTP is the kernel's account of its clock: whether an NTP daemon
// (chrony, ntpd, systemd-timesyncd) keeps it synchronized, and its maximum
// and estimated error. Reading it needs no privilege, inside a container
// too; nil when the kernel refuses.
func KernelNTP() *rundir.NTPState {
	var t unix.Timex
	state, err := unix.Adjtimex(&t)
	if err != nil {
		return nil
	}
	return &rundir.NTPState{
		Synchronized: state != unix.TIME_ERROR && t.Status&unix.STA_UNSYNC == 0,
		MaxErrorS:    float64(t.Maxerror) / 1e6, // µs
		EstErrorS:    float64(t.Esterror) / 1e6,
	}
}
