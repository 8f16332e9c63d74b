// Package ports answers, for doctor, up and join alike, whether a host TCP
// port is free and, if not, who holds it: a container (named, so the user
// can stop it) or another process.
package ports

import (
	"net"
	"strconv"

	"github.com/mltrain/mltrain/internal/docker"
)

// Holder is the container in cs that publishes host TCP port, if one does.
// cs is the engine's container list; running or not, a container that
// publishes the port claims it.
func Holder(cs []docker.Container, port int) (docker.Container, bool) {
	for _, c := range cs {
		for _, p := range c.Ports {
			if p.HostPort == port && (p.Proto == "" || p.Proto == "tcp") {
				return c, true
			}
		}
	}
	return docker.Container{}, false
}

// Free binds TCP port on host ("" for every address) and lets it go at once:
// nil when nothing else holds it, else the bind's error (address in use,
// permission denied for a low port).
func Free(host string, port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return err
	}
	return l.Close()
}
