package console

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// hostSet is the set of host names a console answers (Options.AllowedHosts,
// normalized by hostName), besides the ones it always answers.
type hostSet struct {
	any   bool // "*" was given
	names map[string]bool
}

// newHostSet checks and normalizes Options.AllowedHosts.
func newHostSet(hosts []string) (hostSet, error) {
	s := hostSet{names: map[string]bool{}}
	for _, h := range hosts {
		switch {
		case h == "*":
			s.any = true
		case h == "" || strings.ContainsAny(h, ":/ []") || strings.Trim(h, ".") == "":
			return hostSet{}, fmt.Errorf("console: AllowedHosts %q: want a host name (\"console.example.com\") "+
				"without scheme, port or path, or \"*\"", h)
		default:
			s.names[hostName(h)] = true
		}
	}
	return s, nil
}

// allows reports whether the console answers a request whose Host header
// is hostport. It always answers localhost, names under .localhost and IP
// addresses: a browser sends those only to the address itself (localhost
// resolves to the loopback), so no page of another site can reach the
// console under them. Any other name must be in the set.
func (s hostSet) allows(hostport string) bool {
	if s.any {
		return true
	}
	h := hostName(hostport)
	switch {
	case h == "":
		return false
	case h == "localhost" || strings.HasSuffix(h, ".localhost"):
		return true
	case s.names[h]:
		return true
	}
	_, err := netip.ParseAddr(h)
	return err == nil
}

// hostName is the host of a Host header ("Name.example:8090",
// "[::1]:8090", "name.example."), lower case, without port, brackets or
// trailing dot.
func hostName(hostport string) string {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	} else if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// misdirected answers a request for a host name the console does not
// answer: 421 Misdirected Request, in plain text, showing none of the
// queue.
func misdirected(w http.ResponseWriter, r *http.Request) {
	http.Error(w, fmt.Sprintf("421 misdirected request: this console does not answer the host name %q; "+
		"it answers localhost, IP addresses and the names in its AllowedHosts "+
		"(overtake console --allowed-hosts)", hostName(r.Host)), http.StatusMisdirectedRequest)
}
