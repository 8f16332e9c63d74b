package service

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/clierr"
)

func TestCheckProject(t *testing.T) {
	for _, ok := range []string{"mltrain", "ncaudit", "lab_2", "0lab", strings.Repeat("a", MaxProjectLen)} {
		assert.NoError(t, CheckProject(ok), ok)
	}
	for bad, want := range map[string]string{
		strings.Repeat("a", 300):             "--project is 300 characters long; at most 48",
		strings.Repeat("a", MaxProjectLen+1): "--project is 49 characters long",
		"My Lab":                             `--project "My Lab" is not a valid Compose project name`,
		"-lab":                               "not a valid Compose project name",
		"lab.2":                              "not a valid Compose project name",
		"":                                   "not a valid Compose project name",
	} {
		err := CheckProject(bad)
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), want)
		assert.Equal(t, clierr.ExitUsage, clierr.Code(err))
		assert.NotEmpty(t, clierr.Hint(err))
	}
}
