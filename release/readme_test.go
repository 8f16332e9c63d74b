package release

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// README's top shows two paths in two commands each; they stay true: the
// install line fetches this repository's install.sh with the variable it
// reads, and the checkout's commands are Makefile targets.
func TestReadmeTopCommands(t *testing.T) {
	root := repoRoot(t)
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(root, name))
		require.NoError(t, err)
		return string(b)
	}
	readme, installer, makefile, gomod := read("README.md"), read("install.sh"), read("Makefile"), read("go.mod")
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(readme, 2)
	require.Len(t, blocks, 2, "README's first two sh blocks")
	cmds := func(block string) []string {
		var c []string
		for _, l := range strings.Split(strings.TrimSpace(block), "\n") {
			c = append(c, strings.TrimSpace(strings.SplitN(l, "  #", 2)[0]))
		}
		return c
	}

	node := cmds(blocks[0][1])
	require.Len(t, node, 2, "a lab node: the install line, then mltrain up")
	repo := strings.TrimPrefix(strings.Fields(strings.SplitN(gomod, "\n", 2)[0])[1], "github.com/")
	m := regexp.MustCompile(`^curl -fsSL https://raw\.githubusercontent\.com/(\S+?)/[^/\s]+/install\.sh \| MLTRAIN_VERSION=v\d+\.\d+\.\d+ sh$`).FindStringSubmatch(node[0])
	require.NotNil(t, m, "install line %q", node[0])
	assert.Equal(t, repo, m[1], "the installer comes from this repository")
	assert.Contains(t, installer, "${MLTRAIN_VERSION:-}", "install.sh reads MLTRAIN_VERSION")
	assert.Contains(t, installer, "https://github.com/"+repo+"/releases/download", "and downloads this repository's releases")
	assert.Equal(t, "mltrain up", node[1])

	checkout := cmds(blocks[1][1])
	assert.Equal(t, []string{"make up", "make test"}, checkout)
	for _, target := range []string{"up", "test", "build", "dist"} {
		assert.Regexp(t, `(?m)^`+target+`:`, makefile, "Makefile target %s", target)
	}
}
