package fleet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/mltrain/mltrain/internal/ports/portstest"
)

// Each way a TCP connect fails reads as a sentence with its fix, never as
// Go's "dial tcp ...: connect: ..." words.
func TestDialProblemsAreSentences(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens there now
	_, refused := net.Dial("tcp", addr)
	require.Error(t, refused)
	_, port, _ := net.SplitHostPort(addr)

	op := func(e error) error {
		return &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: e}}
	}
	for _, c := range []struct {
		name, addr  string
		err         error
		detail, fix string
	}{
		{"refused", addr, refused, addr + " refused the connection: nothing listens on port " + port + " there (is sshd running?)", "sudo systemctl start ssh"},
		{"no such host", "node-7.invalid:22", &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "node-7.invalid", IsNotFound: true}},
			"cannot resolve the name node-7.invalid: no such host", "hosts file"},
		{"no route", "10.0.0.9:22", op(syscall.EHOSTUNREACH), "no route to 10.0.0.9: the node is down", "lease is active"},
		{"timeout", "10.0.0.9:22", fmt.Errorf("dial: %w", context.DeadlineExceeded), "10.0.0.9:22 did not answer within 20s", "opens port 22"},
		{"other", "10.0.0.9:22", op(syscall.EACCES), "cannot connect to 10.0.0.9:22:", "address and port"},
	} {
		detail, fix := dialProblem(c.addr, c.err)
		assert.Contains(t, detail, c.detail, c.name)
		assert.Contains(t, fix, c.fix, c.name)
		if c.name != "other" {
			assert.NotContains(t, detail, "dial tcp", c.name)
		}
	}
}

// A port that takes the connection and closes it (no SSH server there)
// reads as that, not as "ssh: handshake failed: EOF".
func TestHandshakeProblemIsASentence(t *testing.T) {
	addr := portstest.Hangup(t)
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	_, _, _, err = ssh.NewClientConn(conn, addr, &ssh.ClientConfig{User: "cc", HostKeyCallback: ssh.InsecureIgnoreHostKey()})
	require.Error(t, err)
	detail, fix := handshakeProblem(addr, err)
	assert.Equal(t, addr+" took the connection and closed it before the SSH handshake finished: no SSH server there, or it turns this address away (MaxStartups, a firewall, fail2ban)", detail)
	assert.Contains(t, fix, "ssh -v")

	detail, _ = handshakeProblem("10.0.0.9:22", errors.New("ssh: no common algorithm for key exchange"))
	assert.Equal(t, "the SSH handshake with 10.0.0.9:22 failed: ssh: no common algorithm for key exchange", detail)
}
