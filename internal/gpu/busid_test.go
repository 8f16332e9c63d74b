package gpu

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNormalizeBusID(t *testing.T) {
	for in, want := range map[string]string{
		"00000000:17:00.0": "0000:17:00.0", // NVML
		"0000:3B:00.0":     "0000:3b:00.0",
		"3b:00.0":          "0000:3b:00.0", // lspci
		" 0001:C3:1f.7\n":  "0001:c3:1f.7",
		"10000:01:00.0":    "10000:01:00.0", // VMD domains are wider than 4 digits
	} {
		got, err := NormalizeBusID(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "17", "17:00", "zz:00.0", "0000:17:00.8", "0000:17:20.0", "0000:117:00.0", "a:b:c:d.0"} {
		_, err := NormalizeBusID(bad)
		assert.Error(t, err, bad)
	}
}
