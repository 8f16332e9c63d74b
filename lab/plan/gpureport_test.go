package plan

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/internal/host"
)

func gpusJSON(t testing.TB, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "gpus.json")
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

func TestReadGPUReportForms(t *testing.T) {
	report := `{"gpus":[{"vendor":"amd","index":0,"uuid":"1a","name":"MI100","pci_bus_id":"0000:23:00.0","render_node":"/dev/dri/renderD128","source":"kfd"}],"problems":[]}`
	r, err := ReadGPUReport(gpusJSON(t, report))
	require.NoError(t, err)
	require.Len(t, r.GPUs, 1)
	assert.Equal(t, gpu.AMD, r.GPUs[0].Vendor)
	assert.Equal(t, "/dev/dri/renderD128", r.GPUs[0].RenderNode)

	// The host-facts form (gpus nested) is accepted too.
	r, err = ReadGPUReport(gpusJSON(t, `{"gpus":`+report+`,"cpus":64}`))
	require.NoError(t, err)
	assert.Len(t, r.GPUs, 1)

	// No GPUs at all is a valid report (CPU rehearsal).
	r, err = ReadGPUReport(gpusJSON(t, `{"gpus":null,"problems":[{"code":"no-gpu","message":"none","fix":""}]}`))
	require.NoError(t, err)
	assert.Empty(t, r.GPUs)
}

func TestReadGPUReportErrorsNameTheFile(t *testing.T) {
	const shape = `'mltrain gpus --json' writes: {"gpus": [...], "problems": [...]}`
	for name, c := range map[string]struct{ content, says string }{
		"malformed":      {`{"gpus":[`, "is not valid JSON"},
		"an empty array": {`[]`, "holds a JSON array, not the object " + shape},
		"not an object":  {`[1,2]`, "holds a JSON array, not the object " + shape},
		"null":           {`null`, "holds null, not the object " + shape},
		"no gpus key":    {`{"devices":[]}`, `has no "gpus" list: 'mltrain gpus --json' writes {"gpus": [...], "problems": [...]}`},
		"gpus a string":  {`{"gpus":"two"}`, `"gpus" is a string, not a list`},
		"unknown vendor": {`{"gpus":[{"vendor":"intel","index":0,"uuid":"x"}]}`, `unknown GPU vendor "intel"`},
		"wrong types":    {`{"gpus":[{"vendor":"nvidia","index":"zero"}]}`, `"gpus.index" holds a string where 'mltrain gpus --json' writes a number`},
		"driver missing": {`{"gpus":[],"problems":[{"code":"driver-missing","message":"no driver bound","fix":"install the driver"}]}`, "no driver bound"},
	} {
		t.Run(name, func(t *testing.T) {
			p := gpusJSON(t, c.content)
			_, err := ReadGPUReport(p)
			require.Error(t, err)
			assert.Contains(t, err.Error(), p)
			assert.Contains(t, err.Error(), c.says)
			assert.NotContains(t, err.Error(), "Go value", "no Go type in a user's message")
			assert.NotContains(t, err.Error(), "Go struct")
			assert.NotEmpty(t, clierr.HintWith(err, clierr.Plain))
		})
	}
}

// FuzzReadGPUReport: no input makes reading or planning panic; whatever
// reads cleanly also plans cleanly or fails with an error.
func FuzzReadGPUReport(f *testing.F) {
	f.Add(`{"gpus":[{"vendor":"nvidia","index":0,"uuid":"GPU-1"},{"vendor":"nvidia","index":1,"uuid":"GPU-2"}]}`)
	f.Add(`{"gpus":[{"vendor":"amd","index":0,"uuid":"1","render_node":"/dev/dri/renderD128"}]}`)
	f.Add(`{"gpus":{"gpus":[]}}`)
	f.Add(`{"gpus":[{"vendor":"nvidia","index":-5,"uuid":"GPU-1","mig":true}]}`)
	f.Add(`null`)
	f.Fuzz(func(t *testing.T, content string) {
		r, err := ReadGPUReport(gpusJSON(t, content))
		if err != nil {
			return
		}
		for _, share := range []bool{false, true} {
			p, err := New(host.Facts{GPUs: r, CPUs: 16, MemoryBytes: 64 << 30}, Options{ShareGPU: share}, creds)
			if err == nil && len(p.Workers) == 0 {
				t.Fatalf("a plan without workers from %q", content)
			}
		}
	})
}
