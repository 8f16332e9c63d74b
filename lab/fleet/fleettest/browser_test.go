package fleettest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The browser check must be able to fail: a page that logs an error and
// tries to fetch something is caught; a plain one is not.
func TestOpenCatchesConsoleErrorsAndFetches(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.html")
	bad := filepath.Join(dir, "bad.html")
	const head = `<!DOCTYPE html><html><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'"><title>t</title></head><body>`
	require.NoError(t, os.WriteFile(good, []byte(head+`<h1>host-a</h1><p>host-b</p><details><summary>check</summary>evidence-x</details></body></html>`), 0o644))
	require.NoError(t, os.WriteFile(bad, []byte(head+`<h1>host-a</h1><img src="http://127.0.0.1:1/x.png"><script>console.error("boom")</script></body></html>`), 0o644))

	p := Open(t, good, "browser-good")
	assert.Empty(t, p.Problems)
	assert.Equal(t, 0, p.Fetches)
	assert.Contains(t, p.Text, "host-a")
	assert.Contains(t, p.Text, "host-b")
	assert.NotContains(t, p.Text, "evidence-x", "a closed <details> hides its content on screen")
	assert.Contains(t, p.PrintText, "host-b")
	st, err := os.Stat(p.Screenshot)
	require.NoError(t, err)
	assert.Greater(t, st.Size(), int64(100))

	p = Open(t, bad, "browser-bad")
	assert.NotEmpty(t, p.Problems)
	joined := strings.Join(p.Problems, "\n")
	assert.Contains(t, joined, "Content Security Policy", "the refused script and image are reported")
}
