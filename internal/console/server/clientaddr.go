package server

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Client-address headers a trusted proxy may name the client in.
const (
	headerXForwardedFor = "X-Forwarded-For"
	headerForwarded     = "Forwarded"
)

// ParseTrustedProxies reads CIDRs (or single addresses) of the proxies whose
// client-address header the console believes.
func ParseTrustedProxies(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q is neither a CIDR nor an address", s)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

// ValidateClientAddressHeader checks ClientAddressHeader names a header the
// console can read.
func (o Options) ValidateClientAddressHeader() error {
	switch http.CanonicalHeaderKey(o.ClientAddressHeader) {
	case "", headerXForwardedFor, headerForwarded:
		return nil
	}
	return fmt.Errorf("%q: use %s or %s", o.ClientAddressHeader, headerXForwardedFor, headerForwarded)
}

// clientAddr is the address sign-in limits and audit lines name. It is the
// connection's peer unless that peer is a trusted proxy: then the client is
// the nearest address in the proxy's header that is not itself a trusted
// proxy, read from the right, since a proxy appends the address it saw and
// everything to its left came from the client and may be made up. A header
// from any other peer is ignored: a client could set it to escape the limit.
func (s *Server) clientAddr(r *http.Request) string {
	peer := peerAddr(r)
	if !s.trusted(peer) {
		return peer.String()
	}
	hops := forwardedHops(r, s.opts.ClientAddressHeader)
	client := peer
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(hops[i])
		if err != nil {
			break // what a trusted proxy wrote does not parse: stop at the last good hop
		}
		client = a.Unmap()
		if !s.trusted(client) {
			break
		}
	}
	return client.String()
}

func (s *Server) trusted(a netip.Addr) bool {
	for _, p := range s.opts.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// peerAddr is the connection's remote address.
func peerAddr(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}

// forwardedHops lists the addresses of the header, leftmost first. Only the
// one header the operator named is read: a proxy that sets X-Forwarded-For
// passes a Forwarded header from the client untouched, and the other way round.
func forwardedHops(r *http.Request, header string) []string {
	var hops []string
	if http.CanonicalHeaderKey(header) == headerForwarded {
		// Forwarded: for=192.0.2.60;proto=https, for="[2001:db8::17]:4711" (RFC 7239).
		for _, line := range r.Header.Values(headerForwarded) {
			for _, elem := range strings.Split(line, ",") {
				for _, pair := range strings.Split(elem, ";") {
					k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
					if ok && strings.EqualFold(k, "for") {
						hops = append(hops, forwardedNode(strings.Trim(v, `"`)))
					}
				}
			}
		}
		return hops
	}
	for _, line := range r.Header.Values(headerXForwardedFor) {
		for _, h := range strings.Split(line, ",") {
			hops = append(hops, strings.TrimSpace(h))
		}
	}
	return hops
}

// forwardedNode strips the port and brackets of an RFC 7239 node.
func forwardedNode(v string) string {
	if strings.HasPrefix(v, "[") {
		if end := strings.Index(v, "]"); end > 0 {
			return v[1:end]
		}
	}
	if host, _, err := net.SplitHostPort(v); err == nil {
		return host
	}
	return v
}
