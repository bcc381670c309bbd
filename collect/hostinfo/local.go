package hostinfo

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"time"
)

// IsLocal reports whether host (a name or an address, as in a URL) is this
// machine: a loopback address, one of its interfaces' addresses, or a name
// that resolves to one. A name that does not resolve within a second is
// not local.
func IsLocal(ctx context.Context, host string) bool {
	host = strings.Trim(host, "[]")
	if host == "" {
		return false
	}
	if name, _ := hostnameFunc(); strings.EqualFold(host, "localhost") || strings.EqualFold(host, name) {
		return true
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = append(addrs, a)
	} else {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return false
		}
		addrs = ips
	}
	own := interfaceAddrs()
	for _, a := range addrs {
		a = a.Unmap()
		if a.IsLoopback() || a.IsUnspecified() || own[a] {
			return true
		}
	}
	return false
}

// interfaceAddrs is the set of this machine's interface addresses.
func interfaceAddrs() map[netip.Addr]bool {
	own := map[netip.Addr]bool{}
	ifaddrs, err := net.InterfaceAddrs()
	if err != nil {
		return own
	}
	for _, ia := range ifaddrs {
		if p, err := netip.ParsePrefix(ia.String()); err == nil {
			own[p.Addr().Unmap()] = true
		}
	}
	return own
}
