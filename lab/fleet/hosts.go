package fleet

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/mltrain/mltrain/internal/clierr"
)

// Host is one line of the hosts file: `[user@]address[:port] [label]`.
type Host struct {
	Spec    string // the host as the file wrote it
	User    string // empty: Options.User
	Address string // a name, an IPv4 address or an IPv6 one (without brackets)
	Port    int    // 22 when the file gives none
	Label   string // the rest of the line: a student's or a group's name
	Line    int
}

// Addr is the address to dial, host:port.
func (h Host) Addr() string { return net.JoinHostPort(h.Address, strconv.Itoa(h.Port)) }

// Name is how the reports call the host: its label, else its spec.
func (h Host) Name() string {
	if h.Label != "" {
		return h.Label
	}
	return h.Spec
}

const hostsHint = "write one host per line: [user@]address[:port] [label], e.g. cc@192.5.87.10 ada (# starts a comment)"

// ReadHosts reads the hosts file at path; its mistakes are usage errors.
func ReadHosts(path string) ([]Host, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, clierr.WithCode(clierr.WithHint(fmt.Errorf("hosts file: %w", err), hostsHint), clierr.ExitUsage)
	}
	defer f.Close()
	hosts, err := ParseHosts(f, path)
	return hosts, clierr.WithCode(err, clierr.ExitUsage)
}

// ParseHosts reads a hosts file: one host per line, `[user@]address[:port]
// [label]`, blank lines and `#` comments ignored. name says which file, for
// the errors.
func ParseHosts(r io.Reader, name string) ([]Host, error) {
	var hosts []Host
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		h, err := parseHost(fields[0])
		if err != nil {
			return nil, clierr.WithHint(fmt.Errorf("%s line %d: %w", name, n, err), hostsHint)
		}
		h.Label, h.Line = strings.Join(fields[1:], " "), n
		key := h.User + "@" + h.Addr()
		if first, dup := seen[key]; dup {
			return nil, clierr.Hintf("remove one of them", "%s line %d: host %s is already on line %d", name, n, h.Spec, first)
		}
		seen[key] = n
		hosts = append(hosts, h)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(hosts) == 0 {
		return nil, clierr.Hintf(hostsHint, "%s names no host", name)
	}
	return hosts, nil
}

func parseHost(spec string) (Host, error) {
	h := Host{Spec: spec, Port: 22}
	rest := spec
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		h.User, rest = rest[:i], rest[i+1:]
		if h.User == "" {
			return h, fmt.Errorf("%q: empty user before @", spec)
		}
	}
	// A port needs brackets around an IPv6 address ([::1]:2222), as in ssh's
	// known_hosts; a bare address with several colons is IPv6 without a port.
	if strings.HasPrefix(rest, "[") || strings.Count(rest, ":") == 1 {
		host, port, err := net.SplitHostPort(rest)
		if err != nil && strings.HasPrefix(rest, "[") && strings.HasSuffix(rest, "]") {
			host, port, err = strings.Trim(rest, "[]"), "22", nil
		}
		if err != nil {
			return h, fmt.Errorf("%q: %w", spec, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil || p < 1 || p > 65535 {
			return h, fmt.Errorf("%q: port %q is not a number from 1 to 65535", spec, port)
		}
		rest, h.Port = host, p
	}
	if rest == "" {
		return h, fmt.Errorf("%q: no address", spec)
	}
	h.Address = rest
	return h, nil
}
