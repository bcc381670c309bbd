package hostinfo

import (
	"context"
	"net"
	"net/netip"
	"testing"
)

func TestIsLocal(t *testing.T) {
	ctx := context.Background()
	for _, host := range []string{"localhost", "127.0.0.1", "127.0.0.2", "::1", "[::1]", "0.0.0.0"} {
		if !IsLocal(ctx, host) {
			t.Errorf("%s: not local", host)
		}
	}
	// an address of one of this machine's interfaces
	if ifaddrs, err := net.InterfaceAddrs(); err == nil {
		for _, ia := range ifaddrs {
			if p, err := netip.ParsePrefix(ia.String()); err == nil && !p.Addr().IsLoopback() {
				if !IsLocal(ctx, p.Addr().String()) {
					t.Errorf("%s (an interface's address): not local", p.Addr())
				}
				break
			}
		}
	}
	// TEST-NET addresses and a name that cannot resolve
	for _, host := range []string{"192.0.2.10", "2001:db8::1", "gpu-box.invalid"} {
		if IsLocal(ctx, host) {
			t.Errorf("%s: local", host)
		}
	}
}
