package fleet

import (
	"crypto/rand"
	"crypto/rsa"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/mltrain/mltrain/internal/clierr"
)

func TestParseHosts(t *testing.T) {
	hosts, err := ParseHosts(strings.NewReader(`# section 2
cc@192.5.87.10 ada lovelace   # lab partner: grace
192.5.87.11:2222

[2001:db8::1]:2200 ipv6
  cc@2001:db8::2
node-3.example.org
`), "hosts.txt")
	require.NoError(t, err)
	require.Len(t, hosts, 5)
	assert.Equal(t, Host{Spec: "cc@192.5.87.10", User: "cc", Address: "192.5.87.10", Port: 22, Label: "ada lovelace", Line: 2}, hosts[0])
	assert.Equal(t, "192.5.87.11:2222", hosts[1].Addr())
	assert.Equal(t, "192.5.87.11:2222", hosts[1].Name(), "no label: the spec names it")
	assert.Equal(t, "[2001:db8::1]:2200", hosts[2].Addr())
	assert.Equal(t, "ipv6", hosts[2].Name())
	assert.Equal(t, "[2001:db8::2]:22", hosts[3].Addr())
	assert.Equal(t, "cc", hosts[3].User)
	assert.Equal(t, "node-3.example.org:22", hosts[4].Addr())

	for _, bad := range []struct{ file, err string }{
		{"# nothing\n\n", "hosts.txt names no host"},
		{"a\nb:99999\n", `hosts.txt line 2: "b:99999": port "99999" is not a number`},
		{"@a\n", "empty user"},
		{"cc@:22\n", "no address"},
		{"a\ncc@b\nb\ncc@b:22 again\n", "line 4: host cc@b:22 is already on line 2"},
	} {
		_, err := ParseHosts(strings.NewReader(bad.file), "hosts.txt")
		require.Error(t, err, bad.file)
		assert.Contains(t, err.Error(), bad.err)
		assert.NotEmpty(t, clierr.Hint(err))
	}
}

func TestRemoteCommandQuotesForTheShell(t *testing.T) {
	assert.Equal(t, "mltrain verify --json", remoteCommand(Options{Mltrain: "mltrain"}))
	assert.Equal(t, `~/'my bin/mltrain' verify --json --project lab2 --state-dir '/data/it'\''s'`,
		remoteCommand(Options{Mltrain: "~/my bin/mltrain", Project: "lab2", StateDir: "/data/it's"}))
	assert.Equal(t, "mltrain verify --json --only ray,data --data-full",
		remoteCommand(Options{Mltrain: "mltrain", Only: []string{"ray", "data"}, DataFull: true}), "the host's verify checks what the instructor asked for")
}

// A host known by its RSA key is asked for an RSA key, not "changed".
func TestHostKeyAlgorithmsFollowTheKnownKey(t *testing.T) {
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	pub, err := ssh.NewPublicKey(&priv.PublicKey)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "known_hosts")
	require.NoError(t, os.WriteFile(file, []byte(knownhosts.Line([]string{"[10.0.0.1]:2222"}, pub)+"\n"), 0o600))
	k, err := newHostKeys(file, false)
	require.NoError(t, err)
	remote := &net.TCPAddr{IP: net.ParseIP("10.0.0.1"), Port: 2222}
	assert.Equal(t, []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}, k.algorithms("10.0.0.1:2222", remote))
	assert.Nil(t, k.algorithms("10.0.0.2:22", &net.TCPAddr{IP: net.ParseIP("10.0.0.2"), Port: 22}), "an unknown host: any")

	missing, err := newHostKeys(filepath.Join(t.TempDir(), "none"), false)
	require.NoError(t, err, "a missing known_hosts is an empty one")
	assert.Nil(t, missing.algorithms("10.0.0.1:2222", remote))
}
