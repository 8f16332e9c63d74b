package lab

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/gpu"
)

const gpusJSONHint = "produce it on the lab host with 'mltrain gpus --json > FILE'"

// ReadGPUReport reads a `mltrain gpus --json` file (a gpu.Report; the
// host.Facts form with the report under "gpus" is accepted too) and
// validates it as NewPlan would, naming the file in every error.
func ReadGPUReport(path string) (gpu.Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return gpu.Report{}, clierr.WithHint(fmt.Errorf("--gpus-from %s: %w", path, err), gpusJSONHint)
	}
	var probe struct {
		GPUs json.RawMessage `json:"gpus"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return gpu.Report{}, clierr.WithHint(fmt.Errorf("--gpus-from %s is not valid JSON: %w", path, err), gpusJSONHint)
	}
	raw := b
	if t := bytes.TrimSpace(probe.GPUs); len(t) > 0 && t[0] == '{' {
		raw = probe.GPUs // host facts: {"gpus": {"gpus": [...], "problems": [...]}, ...}
	} else if len(t) == 0 || t[0] != '[' && !bytes.Equal(t, []byte("null")) {
		return gpu.Report{}, clierr.WithHint(fmt.Errorf("--gpus-from %s: no \"gpus\" list: not the output of 'mltrain gpus --json'", path), gpusJSONHint)
	}
	var r gpu.Report
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&r); err != nil {
		return gpu.Report{}, clierr.WithHint(fmt.Errorf("--gpus-from %s: %w", path, err), gpusJSONHint)
	}
	if err := ValidateGPUReport(r); err != nil {
		return gpu.Report{}, fmt.Errorf("--gpus-from %s: %w", path, err)
	}
	return r, nil
}

// ValidateGPUReport checks a report the way NewPlan does (known vendor, one
// vendor, identifiers present, no device listed twice, usable hardware).
func ValidateGPUReport(r gpu.Report) error {
	_, _, err := usableGPUs(r)
	return err
}
