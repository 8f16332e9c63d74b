package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker/dockertest"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/state"
	"github.com/mltrain/mltrain/lab/verify"
)

func runErr(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, _, err := runCLI(t, args...)
	return out, err
}

func TestVerifyRejectsAnUnknownGroup(t *testing.T) {
	_, err := runErr(t, "verify", "--only", "ray,gpus")
	require.Error(t, err)
	assert.Equal(t, clierr.ExitUsage, clierr.Code(err), "a usage error exits 2")
	assert.Contains(t, err.Error(), `--only "gpus" is not a check group`)
	assert.Contains(t, clierr.Hint(err), "--only ray,minio")
}

func TestVerifyWithoutALab(t *testing.T) {
	dockertest.Engine(t)
	dir := t.TempDir()
	_, err := runErr(t, "verify", "--state-dir", dir)
	require.Error(t, err)
	assert.Equal(t, 1, clierr.Code(err))
	assert.Contains(t, err.Error(), "no lab state")
	assert.Contains(t, clierr.Hint(err), "run 'mltrain --state-dir "+dir+" up' first", "the next step acts on this lab")

	// --json prints JSON even then, saying there is no lab.
	out, err := runErr(t, "verify", "--json", "--state-dir", dir)
	require.Error(t, err)
	var f verify.Failure
	require.NoError(t, json.Unmarshal([]byte(out), &f), out)
	assert.False(t, f.OK)
	assert.Equal(t, verify.ReasonNoLab, f.Reason)
	assert.Contains(t, f.Error, "no lab state at "+dir)
	assert.Contains(t, f.Next, "mltrain --state-dir "+dir+" up", "the next command carries the lab's flags")

	out, err = runErr(t, "verify", "--json", "--only", "nope")
	require.Error(t, err)
	var usage verify.Failure
	require.NoError(t, json.Unmarshal([]byte(out), &usage), out)
	assert.Empty(t, usage.Reason)
	assert.Contains(t, usage.Error, `"nope" is not a check group`)
}

// A lab whose state exists but whose services are all gone: every check
// that reads the lab fails fast with its fix, the JUnit file is written,
// and the exit status is 1.
func TestVerifyALabThatIsDown(t *testing.T) {
	dockertest.Engine(t)
	dir := t.TempDir()
	project := dockertest.UniqueName(t, "mltv-down")
	creds, _, err := state.Dir(dir).CreateCredentials()
	require.NoError(t, err)
	dead := "http://127.0.0.1:1"
	pl := plan.Plan{Project: project, Mode: plan.ModeCPU, Accelerator: plan.AccelCPU, DataVolume: project + "-food11",
		Workers: []plan.Worker{{Index: 0, Service: "ray-worker-0"}, {Index: 1, Service: "ray-worker-1"}}, Credentials: creds}
	require.NoError(t, state.Dir(dir).SaveState(state.State{Project: project, Plan: pl,
		Probes: plan.Probes{Ray: dead, MinIO: dead, Grafana: dead, Prometheus: dead, Jupyter: dead}}))
	junit := filepath.Join(dir, "verify.xml")
	page := filepath.Join(dir, "verify.html")

	out, err := runErr(t, "verify", "--json", "--state-dir", dir, "--project", project, "--junit", junit, "--html", page,
		"--only", "containers", "--only", "ray,minio,metrics,jupyter,exercises")
	require.Error(t, err)
	assert.True(t, clierr.IsSilent(err), "the report already says what failed")
	assert.Equal(t, 1, clierr.Code(err))
	var rep verify.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	assert.False(t, rep.OK)
	assert.Equal(t, []string{"containers", "ray", "minio", "metrics", "jupyter", "exercises"}, rep.Only)
	assert.Equal(t, len(rep.Checks), rep.Failed, "everything reading a lab that is down fails")
	for _, c := range rep.Checks {
		assert.NotEmpty(t, c.Fix, c.ID)
	}
	assert.Less(t, rep.Seconds, 10.0, "a lab that is down is reported quickly")

	// The report is kept in the state dir, as --json printed it, for
	// 'mltrain backup'; 0600, no secret in it.
	kept, err := os.ReadFile(state.Dir(dir).File(state.VerifyReportFile))
	require.NoError(t, err)
	assert.Equal(t, out, string(kept))
	info, err := os.Stat(state.Dir(dir).File(state.VerifyReportFile))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	for _, secret := range creds.Secrets() {
		assert.NotContains(t, string(kept), secret)
	}

	b, err := os.ReadFile(junit)
	require.NoError(t, err)
	var suites struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Name string `xml:"name,attr"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal(b, &suites))
	assert.Equal(t, len(rep.Checks), suites.Tests)
	assert.Equal(t, rep.Failed, suites.Failures)
	assert.Len(t, suites.Suites, 6)

	b, err = os.ReadFile(page)
	require.NoError(t, err)
	assert.Contains(t, string(b), "<title>mltrain verify "+project+"</title>")
	assert.Equal(t, rep.Failed, strings.Count(string(b), "<details open>"), "each failed check is open on the page")

	_, err = runErr(t, "verify", "--state-dir", dir, "--project", project, "--only", "ray", "--junit", filepath.Join(dir, "no", "such", "dir.xml"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--junit")
	assert.Contains(t, clierr.Hint(err), "writable path")
}
