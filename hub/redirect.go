package hub

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// The redirect policy. The Hub answers a shard's /resolve URL with a
// redirect to its CDN, and git files with a relative redirect; the client
// follows redirects itself so that it can refuse:
//   - a loop (the same URL twice along one chain) or more than maxRedirects,
//     reported once, never retried;
//   - a redirect from https to http;
//   - a redirect to a loopback, link-local, private or unspecified address
//     (cloud metadata services, the local network), unless the endpoint
//     (HF_ENDPOINT) is itself such an address, as a local mirror or a
//     test's fake Hub is. An IP literal in the Location is refused before
//     any request; a host name is checked when the connection is dialled
//     (guardDial), on the address it resolved to.

// guardKey marks the context of a request to another origin than the
// endpoint's: its dial must not reach a private address.
type guardKey struct{}

// checkRedirect refuses the redirect from → to when the policy above
// forbids it.
func (c *Client) checkRedirect(from, to *url.URL) error {
	switch s := strings.ToLower(to.Scheme); {
	case s != "http" && s != "https":
		return fmt.Errorf("%w: to %q (not http or https)", ErrRedirect, redact(to.String()))
	case s == "http" && strings.EqualFold(from.Scheme, "https"):
		return fmt.Errorf("%w: from https to http (%s → %s)", ErrRedirect, redact(from.String()), redact(to.String()))
	}
	if originOf(to) == c.origin || c.privateOK() {
		return nil
	}
	if a, err := netip.ParseAddr(strings.Trim(to.Hostname(), "[]")); err == nil && privateAddr(a) {
		return fmt.Errorf("%w: to %s, a private or local address (the endpoint %s is not one)", ErrRedirect, redact(to.String()), c.opt.Endpoint)
	}
	return nil
}

// privateOK reports whether redirects may reach private addresses: the
// endpoint is one (an IP literal, localhost, or a name whose connection
// landed on one).
func (c *Client) privateOK() bool { return c.endpointPrivate || c.dialedPrivate.Load() }

// guarded reports whether a request to u must have its dial checked: the
// client dials itself (no proxy in between) and the endpoint is public.
func (c *Client) guarded(u *url.URL) bool {
	if !c.ownDial || c.privateOK() {
		return false
	}
	if c.proxy != nil {
		if p, err := c.proxy(&http.Request{URL: u}); err != nil || p != nil {
			return false // the proxy resolves the name: only the literal check applies
		}
	}
	return true
}

// privateAddr reports loopback, link-local, private (RFC 1918, fc00::/7),
// unspecified and multicast addresses.
func privateAddr(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified()
}

// endpointIsPrivate reports an endpoint whose host is a private IP
// literal or localhost.
func endpointIsPrivate(endpoint string) bool {
	h := strings.ToLower(strings.Trim(hostnameOf(endpoint), "[]"))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && privateAddr(a)
}

func hostnameOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return p.Hostname()
}

// guardDial returns the DialContext of the client's own transport: a
// connection for a guarded request (another origin than the endpoint's)
// to a private address is refused; a connection of the endpoint's that
// lands on one records that the endpoint is private.
func (c *Client) guardDial() func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	d.ControlContext = func(ctx context.Context, _, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil || !privateAddr(ap.Addr()) {
			return nil
		}
		if ctx.Value(guardKey{}) == nil {
			c.dialedPrivate.Store(true)
			return nil
		}
		if c.privateOK() {
			return nil
		}
		return fmt.Errorf("%w: a redirect leads to %s, a private or local address (the endpoint %s is not one)", ErrRedirect, ap.Addr(), c.opt.Endpoint)
	}
	return d.DialContext
}
