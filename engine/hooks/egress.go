package hooks

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Egress is the policy that holds the webhooks of tenants' controllers (Spec.Tenant): the
// addresses they may connect to. It is decided when a connection is dialled, on each address
// the host name resolved to, so that neither a DNS answer that changes between two calls nor
// a redirect (tenants' webhooks follow none) reaches an address the policy refuses.
//
// An address is refused when it is one of the engine's own listening ports on one of the
// engine's own addresses, whatever Allow says; else when it is in a range refused by default
// (RefusedByDefault: loopback, link-local, which holds the clouds' metadata services,
// unspecified), unless a network of Allow that lies within that range names it; else, when
// Allow or AllowHosts list anything, unless the address is in Allow or the URL's host is in
// AllowHosts. With both empty, every other address is allowed.
//
// It is safe for concurrent use and is not copied once used.
type Egress struct {
	// Allow lists the networks tenants' webhooks may reach. A network lifts a default
	// refusal only where it lies within the refused range: 127.0.0.1/32 allows that loopback
	// address, 0.0.0.0/0 allows no loopback address.
	Allow []netip.Prefix
	// AllowHosts lists the host names tenants' webhooks may name in their URLs:
	// "hooks.example.com", or ".example.com" for every name under example.com. Each address
	// such a name resolves to is still checked: a name never lifts a refusal, so a tenant who
	// controls an allowed name's DNS reaches no refused address through it.
	AllowHosts []string
	// EnginePorts are the ports the engine itself listens on (metrics, health, debug,
	// profiles): refused on the engine's own addresses (loopback, unspecified, its network
	// interfaces') whatever Allow says.
	EnginePorts []uint16
	// Setting names where the policy is set, for refusals: "--tenant-webhook-allow".
	Setting string

	// localAddrs are the engine's own addresses; nil: its interfaces', looked up once.
	localAddrs []netip.Addr
	once       sync.Once
	// plain is the client of webhooks without TLS settings of their own, shared.
	plain *http.Client
}

// refusedRange is an address range tenants' webhooks may not reach by default.
type refusedRange struct {
	prefix netip.Prefix
	what   string
}

// RefusedByDefault are the ranges no tenant's webhook reaches unless Egress.Allow names them.
var RefusedByDefault = []refusedRange{
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local (cloud metadata services)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fd00:ec2::254/128"), "a cloud metadata service"},
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
}

// EgressError is a connection the Egress policy refused.
type EgressError struct {
	Addr    netip.AddrPort
	Setting string
	// Why says what the address is: "127.0.0.0/8 is loopback".
	Why string
}

func (e *EgressError) Error() string {
	setting := ""
	if e.Setting != "" {
		setting = " (" + e.Setting + ")"
	}
	return fmt.Sprintf("egress to %s is refused by the engine's tenant webhook policy%s: %s", e.Addr, setting, e.Why)
}

// Check decides whether a tenant's webhook whose URL names host may connect to addr, one of
// the addresses host resolved to; a refusal is an *EgressError.
func (e *Egress) Check(host string, addr netip.AddrPort) error {
	ip := addr.Addr().Unmap().WithZone("")
	refuse := func(why string) error {
		return &EgressError{Addr: netip.AddrPortFrom(ip, addr.Port()), Setting: e.Setting, Why: why}
	}
	if slices.Contains(e.EnginePorts, addr.Port()) && e.engineAddr(ip) {
		return refuse(fmt.Sprintf("port %d is the engine's own", addr.Port()))
	}
	refused, inRefused := refusedRangeOf(ip)
	for _, p := range e.Allow {
		if p.Contains(ip) && (!inRefused || p.Bits() >= refused.prefix.Bits() && refused.prefix.Contains(p.Addr())) {
			return nil
		}
	}
	switch {
	case inRefused:
		return refuse(fmt.Sprintf("%s is %s", refused.prefix, refused.what))
	case len(e.Allow) == 0 && len(e.AllowHosts) == 0, hostAllowed(e.AllowHosts, host):
		return nil
	}
	return refuse(fmt.Sprintf("neither host %q nor address %s is allowed", host, ip))
}

func refusedRangeOf(ip netip.Addr) (refusedRange, bool) {
	for _, r := range RefusedByDefault {
		if r.prefix.Contains(ip) {
			return r, true
		}
	}
	return refusedRange{}, false
}

// engineAddr reports whether ip is one of the engine's own addresses.
func (e *Egress) engineAddr(ip netip.Addr) bool {
	if ip.IsLoopback() || ip.IsUnspecified() {
		return true
	}
	e.once.Do(e.init)
	return slices.Contains(e.localAddrs, ip)
}

// init looks up the engine's addresses, unless given, and makes the shared client.
func (e *Egress) init() {
	if e.localAddrs == nil {
		addrs, _ := net.InterfaceAddrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(n.IP); ok {
					e.localAddrs = append(e.localAddrs, ip.Unmap())
				}
			}
		}
	}
	e.plain = e.newClient(nil)
}

// hostAllowed reports whether host is one of names, or under one of the names starting
// with a dot.
func hostAllowed(names []string, host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, n := range names {
		if n == host || strings.HasPrefix(n, ".") && strings.HasSuffix(host, n) {
			return true
		}
	}
	return false
}

// client is the HTTP client of a tenant's webhook: it dials through the policy, through no
// proxy (a proxy would connect in the policy's place), and follows no redirect (a 3xx
// answer is the response). tlsConfig nil: the shared client without TLS settings.
func (e *Egress) client(tlsConfig *tls.Config) *http.Client {
	e.once.Do(e.init)
	if tlsConfig == nil {
		return e.plain
	}
	return e.newClient(tlsConfig)
}

func (e *Egress) newClient(tlsConfig *tls.Config) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = e.dialContext
	if tlsConfig != nil {
		t.TLSClientConfig = tlsConfig
	}
	return &http.Client{Transport: t,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// dialContext dials address (host:port as the URL names it), checking every address the
// host resolves to just before connecting to it.
func (e *Egress) dialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second,
		Control: func(_, resolved string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(resolved)
			if err != nil {
				return fmt.Errorf("tenant webhook policy: address %q: %w", resolved, err)
			}
			return e.Check(host, ap)
		}}
	return d.DialContext(ctx, network, address)
}

// ParseEgressAllow reads a list of allowed destinations, each a network (10.0.0.0/8), an
// address (10.1.2.3), a host name (hooks.example.com) or a domain (.example.com, or
// *.example.com, for every name under it), into Egress.Allow and Egress.AllowHosts. Empty
// entries are skipped.
func ParseEgressAllow(entries []string) (nets []netip.Prefix, hosts []string, err error) {
	for _, raw := range entries {
		s := strings.ToLower(strings.TrimSpace(raw))
		if s == "" {
			continue
		}
		if p, err := netip.ParsePrefix(s); err == nil {
			nets = append(nets, p.Masked())
			continue
		}
		if a, err := netip.ParseAddr(s); err == nil {
			nets = append(nets, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		name := strings.TrimSuffix(s, ".")
		if rest, ok := strings.CutPrefix(name, "*."); ok {
			name = "." + rest
		}
		if !hostName(strings.TrimPrefix(name, ".")) {
			return nil, nil, fmt.Errorf("%q is neither a network (10.0.0.0/8), an address, a host name nor a domain (.example.com)", raw)
		}
		hosts = append(hosts, name)
	}
	return nets, hosts, nil
}

// hostName reports whether s is a DNS name: dot-separated labels of letters, digits and
// inner hyphens.
func hostName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}
