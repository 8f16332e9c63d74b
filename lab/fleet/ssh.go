package fleet

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/mltrain/mltrain/internal/clierr"
)

// defaultKeys are the private keys tried after the agent, as ssh tries them.
var defaultKeys = []string{"id_ed25519", "id_ecdsa", "id_rsa"}

// signers returns the keys to offer: --identity's alone when given, else the
// agent's (SSH_AUTH_SOCK) and then ~/.ssh/id_* that need no passphrase. The
// returned close releases the agent's connection.
func signers(identity, home string) (ssh.AuthMethod, func(), error) {
	if identity != "" {
		s, err := readKey(identity)
		if err != nil {
			var pass *ssh.PassphraseMissingError
			if errors.As(err, &pass) {
				return nil, nil, clierr.WithHint(fmt.Errorf("--identity %s: the key has a passphrase", identity),
					"add it to your agent (ssh-add "+identity+") and leave out --identity")
			}
			return nil, nil, clierr.WithHint(fmt.Errorf("--identity %s: %w", identity, err), "pass the private key of the lease's key pair")
		}
		return ssh.PublicKeys(s), func() {}, nil
	}
	var fromAgent func() ([]ssh.Signer, error)
	closeAgent := func() {}
	if sock := os.Getenv("SSH_AUTH_SOCK"); sock != "" {
		if conn, err := net.Dial("unix", sock); err == nil {
			fromAgent, closeAgent = agent.NewClient(conn).Signers, func() { _ = conn.Close() }
		}
	}
	var files []ssh.Signer
	for _, name := range defaultKeys {
		if s, err := readKey(filepath.Join(home, ".ssh", name)); err == nil {
			files = append(files, s) // a key with a passphrase is the agent's to offer
		}
	}
	if fromAgent == nil && len(files) == 0 {
		return nil, nil, clierr.Hintf("pass --identity FILE (the lease's key pair), or add the key to an ssh-agent (ssh-add)",
			"no SSH key: no agent at SSH_AUTH_SOCK and no key without a passphrase in %s", filepath.Join(home, ".ssh"))
	}
	return ssh.PublicKeysCallback(func() ([]ssh.Signer, error) {
		var all []ssh.Signer
		if fromAgent != nil {
			if s, err := fromAgent(); err == nil {
				all = append(all, s...)
			}
		}
		return append(all, files...), nil
	}), closeAgent, nil
}

func readKey(path string) (ssh.Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ssh.ParsePrivateKey(b)
}

// hostKeys checks host keys against a known_hosts file, as OpenSSH does with
// StrictHostKeyChecking=yes, or =accept-new: an unknown key is then recorded;
// a changed key is always refused.
type hostKeys struct {
	mu        sync.Mutex
	path      string
	acceptNew bool
	check     ssh.HostKeyCallback // nil while the file does not exist
}

func newHostKeys(path string, acceptNew bool) (*hostKeys, error) {
	k := &hostKeys{path: path, acceptNew: acceptNew}
	return k, k.load()
}

func (k *hostKeys) load() error {
	cb, err := knownhosts.New(k.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // every host is unknown
	}
	if err != nil {
		return clierr.WithHint(fmt.Errorf("--known-hosts %s: %w", k.path, err), "fix or remove the line it names")
	}
	k.check = cb
	return nil
}

// keyProblem is a host key refused: unknown (Want empty) or changed.
type keyProblem struct {
	host  string
	key   ssh.PublicKey
	known []knownhosts.KnownKey // the keys on record when it changed
	err   error                 // a revoked key, or the file failing to take a new key
}

// probe is a key no host has: checking it shows which keys are on record.
var probe = func() ssh.PublicKey {
	k, _ := ssh.NewPublicKey(ed25519.PublicKey(make([]byte, ed25519.PublicKeySize))) // all zeros
	return k
}()

// algorithms are the host key algorithms of the keys on record for addr,
// so the server is asked for the key type known_hosts holds (a server with
// several host keys would otherwise offer one that looks "changed").
func (k *hostKeys) algorithms(addr string, remote net.Addr) []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.check == nil {
		return nil
	}
	var ke *knownhosts.KeyError
	if !errors.As(k.check(addr, remote, probe), &ke) {
		return nil
	}
	var algos []string
	for _, w := range ke.Want {
		switch t := w.Key.Type(); t {
		case ssh.KeyAlgoRSA:
			algos = append(algos, ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA)
		default:
			algos = append(algos, t)
		}
	}
	return algos
}

// callback checks one host's key; what it refused is left in *problem.
func (k *hostKeys) callback(problem **keyProblem) ssh.HostKeyCallback {
	return func(host string, remote net.Addr, key ssh.PublicKey) error {
		k.mu.Lock()
		defer k.mu.Unlock()
		err := error(&knownhosts.KeyError{})
		if k.check != nil {
			err = k.check(host, remote, key)
		}
		if err == nil {
			return nil
		}
		p := &keyProblem{host: host, key: key}
		var ke *knownhosts.KeyError
		switch {
		case errors.As(err, &ke) && len(ke.Want) > 0:
			p.known = ke.Want
		case errors.As(err, &ke) && k.acceptNew:
			if err := k.record(host, key); err != nil {
				p.err = err
				break
			}
			return nil
		case !errors.As(err, &ke):
			p.err = err
		}
		*problem = p
		return fmt.Errorf("host key of %s refused: %w", host, err)
	}
}

// record appends host's key to the file (creating it, and ~/.ssh, as ssh
// does) and reloads it.
func (k *hostKeys) record(host string, key ssh.PublicKey) error {
	if err := os.MkdirAll(filepath.Dir(k.path), 0o700); err != nil {
		return fmt.Errorf("record host key in %s: %w", k.path, err)
	}
	f, err := os.OpenFile(k.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("record host key in %s: %w", k.path, err)
	}
	_, err = fmt.Fprintln(f, knownhosts.Line([]string{knownhosts.Normalize(host)}, key))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("record host key in %s: %w", k.path, err)
	}
	return k.load()
}

// describe says what was refused and what to do, in the instructor's terms.
func (p *keyProblem) describe(path string) (detail, fix string) {
	fp := ssh.FingerprintSHA256(p.key)
	name := knownhosts.Normalize(p.host)
	switch {
	case p.err != nil:
		return fmt.Sprintf("host key %s of %s refused: %v", fp, name, p.err), "check " + path
	case len(p.known) > 0:
		var lines []string
		for _, w := range p.known {
			lines = append(lines, fmt.Sprintf("%s:%d", w.Filename, w.Line))
		}
		return fmt.Sprintf("host key CHANGED: %s now shows %s, %s holds another", name, fp, strings.Join(lines, ", ")),
			fmt.Sprintf("if the node was reinstalled (a new lease), forget the old key: ssh-keygen -R '%s' -f %s; otherwise do not connect: someone may be in between", name, path)
	default:
		return fmt.Sprintf("host key unknown: %s (%s %s) is not in %s", name, p.key.Type(), fp, path),
			"check the fingerprint (the node's console, or the provider's log), then run again with --accept-new to record it"
	}
}
