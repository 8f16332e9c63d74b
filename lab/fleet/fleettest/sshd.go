// Package fleettest starts real OpenSSH servers (Debian's openssh-server) on
// loopback ports, each standing for one student's node in fleet tests.
package fleettest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mltrain/mltrain/internal/ports/portstest"
	"golang.org/x/crypto/ssh"
)

// SSHDPath is where Debian's openssh-server installs the server; sshd must
// be started by its absolute path (it re-executes itself).
const SSHDPath = "/usr/sbin/sshd"

// Key is a generated ed25519 key pair.
type Key struct {
	Signer  ssh.Signer
	Private []byte // OpenSSH PEM, no passphrase
}

// NewKey generates a key pair.
func NewKey(t testing.TB) Key {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	return Key{Signer: s, Private: pem.EncodeToMemory(block)}
}

// WritePrivate writes the private key to a 0600 file in dir and returns it.
func (k Key) WritePrivate(t testing.TB, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, k.Private, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Host is one OpenSSH server standing for a node.
type Host struct {
	Port    int
	HostKey Key
	Bin     string // put first on the PATH of the commands run over SSH
}

// Addr is the host as a hosts file line names it, with the user to log in as.
func (h Host) Addr(t testing.TB) string { return User(t) + "@127.0.0.1:" + strconv.Itoa(h.Port) }

// KnownHostsLine is the known_hosts line for this host's key.
func (h Host) KnownHostsLine() string {
	return knownLine(h.Port, h.HostKey.Signer.PublicKey())
}

func knownLine(port int, key ssh.PublicKey) string {
	return fmt.Sprintf("[127.0.0.1]:%d %s", port, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key))))
}

// User is who the test logs in as: sshd run by a user other than root lets
// only that user in.
func User(t testing.TB) string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	if os.Geteuid() == 0 {
		return "root"
	}
	t.Fatal("USER is not set")
	return ""
}

// Need fails the test when sshd is missing under CI (.ci/run installs it)
// and skips it elsewhere, or with -short (unit tests alone).
func Need(t testing.TB) {
	t.Helper()
	if testing.Short() && os.Getenv("CI") == "" {
		t.Skip("-short: no sshd")
	}
	if _, err := os.Stat(SSHDPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s: %v (apt-get install openssh-server)", SSHDPath, err)
		}
		t.Skipf("no OpenSSH server (%v): apt-get install openssh-server", err)
	}
}

// Start runs an sshd on a free loopback port that accepts the given client
// keys (none: it refuses every key), running commands with Bin first on
// their PATH. It is stopped when the test ends.
func Start(t testing.TB, accept ...ssh.PublicKey) Host {
	t.Helper()
	Need(t)
	dir := t.TempDir()
	h := Host{Port: portstest.FreePorts(t, 1)[0], HostKey: NewKey(t), Bin: filepath.Join(dir, "bin")}
	if err := os.Mkdir(h.Bin, 0o755); err != nil {
		t.Fatal(err)
	}
	var auth bytes.Buffer
	for _, k := range accept {
		fmt.Fprintf(&auth, "environment=\"PATH=%s:/usr/local/bin:/usr/bin:/bin\" %s", h.Bin, ssh.MarshalAuthorizedKey(k))
	}
	write := func(name string, b []byte, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("authorized_keys", auth.Bytes(), 0o600)
	config := write("sshd_config", []byte(strings.Join([]string{
		"Port " + strconv.Itoa(h.Port),
		"ListenAddress 127.0.0.1",
		"HostKey " + h.HostKey.WritePrivate(t, dir, "host_ed25519"),
		"PidFile " + filepath.Join(dir, "sshd.pid"),
		"AuthorizedKeysFile " + filepath.Join(dir, "authorized_keys"),
		"StrictModes no", // the test's temp dirs are not the user's home
		"UsePAM no",
		"PermitRootLogin prohibit-password",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"PermitUserEnvironment yes", // authorized_keys' environment="PATH=..."
		"LogLevel VERBOSE",
	}, "\n")+"\n"), 0o600)
	if os.Geteuid() == 0 {
		// sshd as root separates privileges into this directory, which the
		// package's service creates at boot; a container has none.
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var log syncBuffer
	cmd := exec.Command(SSHDPath, "-D", "-e", "-f", config)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sshd: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("sshd on port %d said:\n%s", h.Port, log.String())
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(h.Port), time.Second)
		if err == nil {
			_ = c.Close()
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd did not listen on port %d: %v\n%s", h.Port, err, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Script writes an executable shell script named name into the host's Bin.
func (h Host) Script(t testing.TB, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(h.Bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// ClosedPort is a loopback port nothing listens on (reserved for the test).
func ClosedPort(t testing.TB) int { return portstest.FreePorts(t, 1)[0] }

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
