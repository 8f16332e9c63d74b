package verify

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"
)

func sampleNodes() []Node {
	failed := sampleReport()
	ok := sampleReport()
	ok.Checks = ok.Checks[:2]
	ok.Failed, ok.OK = 0, true
	return []Node{
		SingleNode("cc@10.0.0.1", ok),
		{Host: "cc@10.0.0.2:2222", Label: "ada <lovelace>", State: NodeFailed, Detail: "failed: ray.auth", Report: &failed},
		{Host: "10.0.0.3", State: "unreachable", Detail: "dial tcp 10.0.0.3:22: connection refused", Fix: "check the lease"},
	}
}

func TestHTMLIsOneStaticPageNamingEveryNode(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteHTML(&b, "mltrain fleet verify", sampleNodes(), time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)))
	out := b.String()
	doc, err := html.Parse(strings.NewReader(out))
	require.NoError(t, err)

	// Nothing is fetched: no script, no stylesheet link, no src attribute.
	var tags []string
	var text strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			tags = append(tags, n.Data)
			for _, a := range n.Attr {
				assert.NotEqual(t, "src", a.Key, "<%s> fetches %s", n.Data, a.Val)
				if a.Key == "href" {
					assert.True(t, strings.HasPrefix(a.Val, "#"), "<%s href=%q> leaves the page", n.Data, a.Val)
				}
			}
		}
		if n.Type == html.TextNode {
			text.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	assert.NotContains(t, tags, "script")
	assert.NotContains(t, tags, "link")
	assert.Contains(t, out, "default-src 'none'")

	txt := text.String()
	for _, want := range []string{"cc@10.0.0.1", "ada <lovelace>", "cc@10.0.0.2:2222", "10.0.0.3", "unreachable", "connection refused", "check the lease"} {
		assert.Contains(t, txt, want)
	}
	assert.NotContains(t, out, "ada <lovelace>", "text is escaped")
	// The matrix has a column per group that ran, and a failed cell.
	assert.Contains(t, out, `<th class="group">host</th><th class="group">ray</th>`)
	assert.Contains(t, out, `<td class="group fail" title="1 failed, 0 passed, 0 skipped">FAIL 1</td>`)
	// A failed check's details are open, a passed one's closed; the fix shows.
	assert.Regexp(t, `<details open><summary><span class="fail">FAIL</span> <code>ray.auth</code>`, out)
	assert.Regexp(t, `<details><summary><span class="pass">PASS</span> <code>host.gpus</code>`, out)
	assert.Contains(t, txt, "mltrain down && mltrain up")
	assert.Contains(t, txt, "Not every node is verified")
	assert.Equal(t, 3, strings.Count(out, "<section "))
}

func TestNodesJUnitHasOneSuitePerNode(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteNodesJUnit(&b, "mltrain fleet verify", sampleNodes()))
	var got junitSuites
	require.NoError(t, xml.Unmarshal(b.Bytes(), &got))
	require.Len(t, got.Suites, 3)
	assert.Equal(t, []string{"cc@10.0.0.1", "ada <lovelace>", "10.0.0.3"}, []string{got.Suites[0].Name, got.Suites[1].Name, got.Suites[2].Name})
	assert.Equal(t, 0, got.Suites[0].Failures)
	assert.Len(t, got.Suites[0].Cases, 2)
	assert.Equal(t, 1, got.Suites[1].Failures)
	require.Len(t, got.Suites[2].Cases, 1)
	c := got.Suites[2].Cases[0]
	require.NotNil(t, c.Failure)
	assert.Equal(t, "unreachable", c.Failure.Type)
	assert.Contains(t, c.Failure.Text, "fix: check the lease")
	assert.Equal(t, 6, got.Tests)
	assert.Equal(t, 2, got.Failures)
}
