package verify

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/lab/plan"
)

func sampleReport() Report {
	r := Report{Project: "mltrain", Mode: plan.ModeCPU, Started: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), Seconds: 1.25,
		Checks: []Check{
			{ID: "host.gpus", Group: "host", Title: "GPUs", Status: Pass, Evidence: "no GPU hardware", Seconds: 0.01},
			{ID: "host.plumbing", Group: "host", Title: "plumbing", Status: Skip, Evidence: "mode rehearsal: no device", Seconds: 0},
			{ID: "ray.auth", Group: "ray", Title: "token auth", Status: Fail, Evidence: "GET /api/version answered 200 <&> \"x\"",
				Fix: "mltrain down && mltrain up", Seconds: 0.5},
		}}
	r.Passed, r.Skipped, r.Failed = 1, 1, 1
	return r
}

func TestTableShowsEvidenceAndFixes(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteTable(&b, sampleReport(), false))
	out := b.String()
	lines := strings.Split(out, "\n")
	assert.Regexp(t, `^STATUS\s+CHECK\s+EVIDENCE$`, lines[0])
	assert.Regexp(t, `^PASS\s+host\.gpus\s+no GPU hardware$`, lines[1])
	assert.Regexp(t, `^SKIP\s+host\.plumbing\s+mode rehearsal: no device$`, lines[2])
	assert.Regexp(t, `^FAIL\s+ray\.auth\s+GET /api/version`, lines[3])
	assert.Regexp(t, `^\s+fix: mltrain down && mltrain up$`, lines[4])
	// The evidence and fix columns line up.
	assert.Equal(t, strings.Index(lines[1], "no GPU"), strings.Index(lines[3], "GET"))
	assert.Equal(t, strings.Index(lines[3], "GET"), strings.Index(lines[4], "fix:"))
	assert.Contains(t, out, "1 passed, 1 failed, 1 skipped")
	assert.Contains(t, out, "NOT verified")
	assert.NotContains(t, out, "\x1b[", "no colour off a terminal")

	b.Reset()
	require.NoError(t, WriteTable(&b, sampleReport(), true))
	colored := strings.Split(b.String(), "\n")
	assert.Contains(t, colored[1], colorGreen+"PASS"+colorReset)
	assert.Contains(t, colored[3], colorRed+"FAIL"+colorReset)
	assert.Contains(t, colored[2], colorYellow+"SKIP"+colorReset)
	// Colour does not shift the columns on screen.
	strip := func(s string) string {
		for _, c := range []string{colorGreen, colorRed, colorYellow, colorReset} {
			s = strings.ReplaceAll(s, c, "")
		}
		return s
	}
	assert.Equal(t, lines[1], strip(colored[1]))
	assert.Equal(t, lines[3], strip(colored[3]))

	ok := sampleReport()
	ok.Checks, ok.Failed, ok.OK, ok.Only = ok.Checks[:2], 0, true, []string{"host"}
	b.Reset()
	require.NoError(t, WriteTable(&b, ok, false))
	assert.Contains(t, b.String(), "(only host)")
	assert.Contains(t, b.String(), "every checked step is proven")
}

// JUnit as a schema-minded reader sees it.
type jSuites struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Skipped  int      `xml:"skipped,attr"`
	Suites   []struct {
		Name     string `xml:"name,attr"`
		Tests    int    `xml:"tests,attr"`
		Failures int    `xml:"failures,attr"`
		Skipped  int    `xml:"skipped,attr"`
		Cases    []struct {
			Name      string `xml:"name,attr"`
			Classname string `xml:"classname,attr"`
			Time      string `xml:"time,attr"`
			Failure   *struct {
				Message string `xml:"message,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
			Skipped *struct {
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
			SystemOut string `xml:"system-out"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func TestJUnitIsOneSuitePerGroup(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteJUnit(&b, sampleReport()))
	assert.True(t, strings.HasPrefix(b.String(), `<?xml version="1.0" encoding="UTF-8"?>`))
	var got jSuites
	require.NoError(t, xml.Unmarshal(b.Bytes(), &got), b.String())
	assert.Equal(t, 3, got.Tests)
	assert.Equal(t, 1, got.Failures)
	assert.Equal(t, 1, got.Skipped)
	require.Len(t, got.Suites, 2)
	host, ray := got.Suites[0], got.Suites[1]
	assert.Equal(t, "host", host.Name)
	assert.Equal(t, 2, host.Tests)
	assert.Equal(t, 1, host.Skipped)
	assert.Equal(t, "ray", ray.Name)
	assert.Equal(t, 1, ray.Failures)
	require.Len(t, host.Cases, 2)
	assert.Equal(t, "host.gpus: GPUs", host.Cases[0].Name)
	assert.Equal(t, "mltrain.verify.host", host.Cases[0].Classname)
	assert.Nil(t, host.Cases[0].Failure)
	assert.Equal(t, "no GPU hardware", host.Cases[0].SystemOut)
	require.NotNil(t, host.Cases[1].Skipped)
	assert.Equal(t, "mode rehearsal: no device", host.Cases[1].Skipped.Message)
	f := ray.Cases[0].Failure
	require.NotNil(t, f)
	assert.Equal(t, `GET /api/version answered 200 <&> "x"`, f.Message, "markup in evidence is escaped and survives")
	assert.Contains(t, f.Text, "fix: mltrain down && mltrain up")
	assert.Equal(t, "0.500", ray.Cases[0].Time)
}

func TestReportJSONShape(t *testing.T) {
	b, err := json.Marshal(sampleReport())
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	for _, k := range []string{"project", "mode", "ok", "passed", "failed", "skipped", "checks", "seconds"} {
		assert.Contains(t, m, k)
	}
	c := m["checks"].([]any)[2].(map[string]any)
	assert.Equal(t, "fail", c["status"])
	assert.Equal(t, "ray.auth", c["id"])
	assert.Equal(t, "ray", c["group"])
	assert.NotEmpty(t, c["fix"])
	assert.NotEmpty(t, c["evidence"])
}
