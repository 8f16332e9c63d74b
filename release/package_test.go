package release

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker/dockertest"
)

// The amd64 .deb, unpacked into a scratch root as dpkg would install it:
// the binary at /usr/bin/mltrain runs and names the release, the bash, zsh
// and fish completions and a man page per command are where Debian's
// shells and man look, and checksums.txt has the .deb's sha256.
func TestDebInstallsBinaryCompletionsAndManPages(t *testing.T) {
	dockertest.Engine(t) // a real-build test: -short skips it outside CI
	if _, err := exec.LookPath("dpkg-deb"); err != nil && os.Getenv("CI") == "" {
		t.Skip("no dpkg-deb on this machine (Debian's dpkg package)")
	}
	d := makeDist(t)
	name := packageName(t, d, "deb", "amd64")
	deb := filepath.Join(distDir(t, d), d.tag, name)

	h := sha256.Sum256(d.files[name])
	assert.Contains(t, string(d.files["checksums.txt"]), hex.EncodeToString(h[:])+"  "+name+"\n", "checksums.txt covers the .deb")

	fields, err := exec.Command("dpkg-deb", "--show", "--showformat", "${Package} ${Architecture}", deb).CombinedOutput()
	require.NoError(t, err, string(fields))
	assert.Equal(t, "mltrain amd64", string(fields))

	root := t.TempDir()
	out, err := exec.Command("dpkg-deb", "-x", deb, root).CombinedOutput()
	require.NoError(t, err, string(out))

	bin := filepath.Join(root, "usr/bin/mltrain")
	fi, err := os.Stat(bin)
	require.NoError(t, err, "/usr/bin/mltrain")
	assert.Equal(t, os.FileMode(0o755), fi.Mode().Perm())
	got, err := exec.Command(bin, "version", "--json").CombinedOutput()
	require.NoError(t, err, string(got))
	var v struct{ Version string }
	require.NoError(t, json.Unmarshal(got, &v), string(got))
	assert.Equal(t, d.version, v.Version)

	// Each completion is the script `mltrain completion <shell>` prints.
	for shell, path := range map[string]string{
		"bash": "usr/share/bash-completion/completions/mltrain",
		"zsh":  "usr/share/zsh/vendor-completions/_mltrain",
		"fish": "usr/share/fish/vendor_completions.d/mltrain.fish",
	} {
		b, err := os.ReadFile(filepath.Join(root, path))
		require.NoError(t, err, "%s completion", shell)
		want, err := exec.Command(bin, "completion", shell).Output()
		require.NoError(t, err)
		assert.Equal(t, string(want), string(b), "/%s", path)
	}

	// A page for the top and for each command students type.
	for _, page := range []string{"mltrain", "mltrain-up", "mltrain-lab", "mltrain-verify", "mltrain-down", "mltrain-fleet-verify"} {
		text := gunzipFile(t, filepath.Join(root, "usr/share/man/man1", page+".1.gz"))
		assert.Contains(t, text, `.TH "MLTRAIN" "1"`, page)
		assert.Contains(t, text, "mltrain "+d.version, "%s names the release", page)
		assert.Contains(t, text, "\n"+page+" ", "%s: its NAME line", page)
	}
	_, err = os.Stat(filepath.Join(root, "usr/share/man/man1/mltrain-gen-docs.1.gz"))
	assert.True(t, os.IsNotExist(err), "the hidden gen-docs has no page")
}

func gunzipFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err, path)
	zr, err := gzip.NewReader(bytes.NewReader(b))
	require.NoError(t, err, path)
	text, err := io.ReadAll(zr)
	require.NoError(t, err, path)
	return string(text)
}
