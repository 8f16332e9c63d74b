package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/gpu"
)

const gpusJSONHint = "produce it on the lab host with 'mltrain gpus --json > FILE'"

// gpusShape is what 'mltrain gpus --json' writes, for messages.
const gpusShape = `{"gpus": [...], "problems": [...]}`

// ReadGPUReport reads a `mltrain gpus --json` file (a gpu.Report; the
// host.Facts form with the report under "gpus" is accepted too) and
// validates it as NewPlan would, naming the file in every error and the
// shape expected when the file has another (never a Go type).
func ReadGPUReport(path string) (gpu.Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return gpu.Report{}, clierr.WithHint(fmt.Errorf("--gpus-from %s: %w", path, err), gpusJSONHint)
	}
	var top any
	if err := json.Unmarshal(b, &top); err != nil {
		return gpu.Report{}, clierr.WithHint(fmt.Errorf("--gpus-from %s is not valid JSON: %w", path, err), gpusJSONHint)
	}
	obj, ok := top.(map[string]any)
	if !ok {
		return gpu.Report{}, clierr.WithHint(fmt.Errorf("--gpus-from %s holds %s, not the object 'mltrain gpus --json' writes: %s",
			path, jsonKind(top), gpusShape), gpusJSONHint)
	}
	raw := b
	switch g := obj["gpus"].(type) {
	case map[string]any: // host facts: {"gpus": {"gpus": [...], "problems": [...]}, ...}
		raw, _ = json.Marshal(g)
	case []any, nil:
		if _, present := obj["gpus"]; !present {
			return gpu.Report{}, clierr.WithHint(fmt.Errorf("--gpus-from %s has no \"gpus\" list: 'mltrain gpus --json' writes %s", path, gpusShape), gpusJSONHint)
		}
	default:
		return gpu.Report{}, clierr.WithHint(fmt.Errorf("--gpus-from %s: \"gpus\" is %s, not a list: 'mltrain gpus --json' writes %s",
			path, jsonKind(g), gpusShape), gpusJSONHint)
	}
	var r gpu.Report
	if err := json.Unmarshal(raw, &r); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			err = fmt.Errorf("%q holds %s where 'mltrain gpus --json' writes %s", te.Field, article(te.Value), jsonType(te.Type.Kind()))
		}
		return gpu.Report{}, clierr.WithHint(fmt.Errorf("--gpus-from %s: %w", path, err), gpusJSONHint)
	}
	if err := ValidateGPUReport(r); err != nil {
		return gpu.Report{}, fmt.Errorf("--gpus-from %s: %w", path, err)
	}
	return r, nil
}

// jsonKind names a decoded JSON value's kind the way JSON does.
func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "a JSON array"
	case map[string]any:
		return "a JSON object"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "null"
}

// article puts "a" or "an" before a JSON kind as encoding/json names it.
func article(kind string) string {
	if kind == "array" {
		return "a list"
	}
	if strings.IndexByte("aeiou", kind[0]) >= 0 {
		return "an " + kind
	}
	return "a " + kind
}

// jsonType names what a Go kind is written as in JSON.
func jsonType(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8,
		reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list"
	}
	return "an object"
}

// ValidateGPUReport checks a report the way NewPlan does (known vendor, one
// vendor, identifiers present, no device listed twice, usable hardware).
func ValidateGPUReport(r gpu.Report) error {
	_, _, err := usableGPUs(r)
	return err
}
