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

func readRepoFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), name))
	require.NoError(t, err)
	return string(b)
}

// shCommands are the commands of README's sh blocks, comments cut.
func shCommands(readme string) [][]string {
	var blocks [][]string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(readme, -1) {
		var c []string
		for _, l := range strings.Split(strings.TrimSpace(m[1]), "\n") {
			if l = strings.TrimSpace(strings.SplitN(l, "#", 2)[0]); l != "" {
				c = append(c, l)
			}
		}
		blocks = append(blocks, c)
	}
	return blocks
}

// README's top shows two paths in two commands each; they stay true: the
// install line fetches this repository's release installer, from the URL
// install.sh downloads from, with the version naming it reads, and says
// exactly what install.sh's own header says; the checkout's commands are
// Makefile targets.
func TestReadmeTopCommands(t *testing.T) {
	readme, installer, makefile, gomod := readRepoFile(t, "README.md"), readRepoFile(t, "install.sh"), readRepoFile(t, "Makefile"), readRepoFile(t, "go.mod")
	blocks := shCommands(readme)
	require.NotEmpty(t, blocks)

	node := blocks[0]
	require.Len(t, node, 2, "a lab node: the install line, then mltrain up")
	repo := strings.TrimPrefix(strings.Fields(strings.SplitN(gomod, "\n", 2)[0])[1], "github.com/")
	base := regexp.MustCompile(`(?m)^base=\$\{MLTRAIN_DOWNLOAD_URL:-(\S+)\}$`).FindStringSubmatch(installer)
	require.NotNil(t, base, "install.sh's default download URL")
	assert.Equal(t, "https://github.com/"+repo+"/releases/download", base[1], "install.sh downloads this repository's releases")
	m := regexp.MustCompile(`^curl -fsSL (\S+)/(v\d+\.\d+\.\d+)/install\.sh \| MLTRAIN_VERSION=(v\d+\.\d+\.\d+) sh$`).FindStringSubmatch(node[0])
	require.NotNil(t, m, "install line %q", node[0])
	assert.Equal(t, base[1], m[1], "the installer comes from where it downloads releases")
	assert.Equal(t, m[2], m[3], "from the release it installs")
	assert.Contains(t, installer, "#   "+node[0]+"\n", "install.sh's header shows the same line")
	assert.Contains(t, installer, "${MLTRAIN_VERSION:-}", "install.sh reads MLTRAIN_VERSION")
	assert.Contains(t, installer, `url="${base%/}/$version"`, "and fetches <url>/<tag>/")
	assert.Equal(t, "mltrain up", node[1])

	var checkout []string
	for _, b := range blocks {
		if len(b) > 0 && strings.HasPrefix(b[0], "make ") {
			checkout = b
			break
		}
	}
	assert.Equal(t, []string{"make up", "make test"}, checkout, "the checkout's block")
	for _, target := range []string{"up", "test", "build", "dist"} {
		assert.Regexp(t, `(?m)^`+target+`:`, makefile, "Makefile target %s", target)
	}
}

// The first screen is the student's path, then the instructor's; the
// prose that moved out is linked and exists.
func TestReadmeFirstScreenIsTheStudentsPath(t *testing.T) {
	readme := readRepoFile(t, "README.md")
	lines := strings.Split(readme, "\n")
	require.Greater(t, len(lines), 30)
	first := strings.Join(lines[:30], "\n")
	for _, c := range []string{"mltrain up", "mltrain lab guide", "mltrain lab ", "mltrain verify", "mltrain backup", "mltrain down", "mltrain fleet verify", "CPU rehearsal"} {
		assert.Contains(t, first, c, "README's first 30 lines")
	}

	sec := regexp.MustCompile(`(?s)\n## Before your lease ends\n(.*?)\n## `).FindStringSubmatch(readme)
	require.NotNil(t, sec, `a section "Before your lease ends"`)
	for _, s := range []string{"mltrain backup ~/lab-backup.tar.gz", "s3://bucket/prefix", "AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID",
		"AWS_SECRET_ACCESS_KEY", "AWS_REGION", "mltrain restore ~/lab-backup.tar.gz", "mltrain up --lease-end +2h50m",
		"mltrain lease 2026-11-29T17:00:00Z", "30 minutes", "docs/BACKUP.md"} {
		assert.Contains(t, sec[1], s, "Before your lease ends")
	}

	for _, doc := range []string{"docs/DESIGN-NOTES.md", "docs/BENCHMARKS.md", "docs/LAB.md"} {
		assert.Contains(t, readme, "("+doc, "README links %s", doc)
		assert.FileExists(t, filepath.Join(repoRoot(t), doc))
	}
	assert.NotContains(t, readme, "## Measured", "benchmarks live in docs/BENCHMARKS.md")
	assert.Contains(t, readRepoFile(t, "docs/BENCHMARKS.md"), "bench-fresh")
	assert.Contains(t, readRepoFile(t, "docs/DESIGN-NOTES.md"), "## If the head restarts")
	for _, a := range regexp.MustCompile(`\]\(docs/DESIGN-NOTES\.md#([a-z0-9-]+)\)`).FindAllStringSubmatch(readme, -1) {
		assert.Contains(t, headingAnchors(readRepoFile(t, "docs/DESIGN-NOTES.md")), a[1], "README's link to DESIGN-NOTES.md#%s", a[1])
	}
}

// headingAnchors are GitHub's anchors of a Markdown file's headings:
// lowercase, punctuation but - and _ dropped, spaces to -.
func headingAnchors(md string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^#+ (.+)$`).FindAllStringSubmatch(md, -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
				b.WriteRune(r)
			}
		}
		out = append(out, b.String())
	}
	return out
}
