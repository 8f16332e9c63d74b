package gpu

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParsePropertiesReadsKernelFile(t *testing.T) {
	b, err := os.ReadFile("testdata/mi100x2/sys/class/kfd/kfd/topology/nodes/2/properties")
	require.NoError(t, err)
	p, err := ParseProperties(b)
	require.NoError(t, err)
	assert.Equal(t, uint64(480), p["simd_count"])
	assert.Equal(t, uint64(17152), p["location_id"])
	assert.Equal(t, uint64(4120847739465503241), p["unique_id"])
	assert.Len(t, p, 38)
}

func TestParsePropertiesRejectsGarbage(t *testing.T) {
	for name, in := range map[string]string{
		"one field":    "simd_count\n",
		"three fields": "simd_count 1 2\n",
		"negative":     "simd_count -1\n",
		"not a number": "simd_count lots\n",
		"hex":          "simd_count 0x10\n",
		"overflow":     "unique_id 18446744073709551616\n",
		"bad name":     "simd-count 3\n",
		"duplicate":    "simd_count 1\nsimd_count 2\n",
		"empty":        "\n\n",
		"binary":       "this is not\x00 a file\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseProperties([]byte(in))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "properties")
		})
	}
}

func TestParsePropertiesAcceptsMissingKeysAndBlankLines(t *testing.T) {
	p, err := ParseProperties([]byte("\nsimd_count 4\n\n  drm_render_minor 130  \n"))
	require.NoError(t, err)
	assert.Equal(t, Properties{"simd_count": 4, "drm_render_minor": 130}, p)
	_, ok := p["domain"]
	assert.False(t, ok, "older kernels omit domain: absent, not an error")
}

func TestParsePropertiesLimitsSize(t *testing.T) {
	big := strings.Repeat("simd_count 1\n", maxPropertiesSize/12)
	_, err := ParseProperties([]byte(big))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bytes")
}

// FuzzParseProperties: never panics, and whatever it accepts survives a
// write/read round trip unchanged (so nothing was half-parsed).
func FuzzParseProperties(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*/sys/class/kfd/kfd/topology/nodes/*/properties")
	banks, _ := filepath.Glob("testdata/*/sys/class/kfd/kfd/topology/nodes/*/mem_banks/*/properties")
	for _, s := range append(seeds, banks...) {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("simd_count 1 2\n"))
	f.Add([]byte("a 18446744073709551615"))
	f.Add([]byte("\x00\xff\n\t \r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseProperties(data)
		if err != nil {
			if p != nil {
				t.Fatalf("error %v with a non-nil result", err)
			}
			return
		}
		keys := make([]string, 0, len(p))
		for k := range p {
			if !validKey(k) {
				t.Fatalf("accepted bad key %q", k)
			}
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var sb strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&sb, "%s %d\n", k, p[k])
		}
		again, err := ParseProperties([]byte(sb.String()))
		if err != nil {
			t.Fatalf("round trip failed: %v", err)
		}
		if len(again) != len(p) {
			t.Fatalf("round trip changed the keys: %v vs %v", again, p)
		}
		for k, v := range p {
			if again[k] != v {
				t.Fatalf("round trip changed %s: %d vs %d", k, again[k], v)
			}
		}
	})
}
