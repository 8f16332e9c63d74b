package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
)

// dialProblem says, as a sentence with its fix, why the TCP connection to
// addr failed: Go's own words ("dial tcp 10.0.0.5:22: connect: connection
// refused") name the system call, not the node's problem.
func dialProblem(addr string, err error) (detail, fix string) {
	host, port, _ := net.SplitHostPort(addr)
	var dns *net.DNSError
	var ne net.Error
	switch {
	case errors.As(err, &dns) && (dns.IsNotFound || dns.IsTemporary || dns.IsTimeout):
		return fmt.Sprintf("cannot resolve the name %s: %s", host, dns.Err),
			"check the address in the hosts file (or this machine's DNS)"
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Sprintf("%s refused the connection: nothing listens on port %s there (is sshd running?)", addr, port),
			"start the node's SSH server ('sudo systemctl start ssh' on it), or fix the port in the hosts file"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return fmt.Sprintf("no route to %s: the node is down or its network is not reachable from here", host),
			"check that the node is up (its lease is active) and that this machine can reach its network (VPN, floating IP)"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("%s did not answer within %s: the node is down, or a firewall drops SSH to it", addr, dialTimeout),
			"check that the node is up (its lease is active) and that its security group opens port " + port + " to you"
	}
	return fmt.Sprintf("cannot connect to %s: %v", addr, err),
		"check that the node is up (its lease is active), the address and port in the hosts file, and that SSH is open to you"
}

// handshakeProblem says why the SSH handshake with addr failed after the
// TCP connection was made (a refused key and a changed host key are
// classified before this).
func handshakeProblem(addr string, err error) (detail, fix string) {
	if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
		return fmt.Sprintf("%s took the connection and closed it before the SSH handshake finished: no SSH server there, or it turns this address away (MaxStartups, a firewall, fail2ban)", addr),
			"check the port in the hosts file, and try 'ssh -v' to that address to see what answers"
	}
	return fmt.Sprintf("the SSH handshake with %s failed: %v", addr, err),
		"check that an SSH server answers at that address and port ('ssh -v' to it shows what answers)"
}
