package clierr

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNextIsWrittenByTheCommandLayer(t *testing.T) {
	err := fmt.Errorf("load: %w", WithNext(errors.New("volume v is gone"),
		Next{Text: "stop it ('%s'), then run '%s' again", Commands: [][]string{{"down"}, {"data", "food11"}}}))
	n, ok := NextOf(err)
	require.True(t, ok)
	assert.Equal(t, "stop it ('mltrain down'), then run 'mltrain data food11' again", n.String())
	flagged := func(words ...string) string { return "mltrain --project p " + strings.Join(words, " ") }
	assert.Equal(t, "stop it ('mltrain --project p down'), then run 'mltrain --project p data food11' again", n.Write(flagged))
	assert.Empty(t, Hint(err), "a Next is no finished hint")
	_, ok = NextOf(errors.New("plain"))
	assert.False(t, ok)
	assert.NoError(t, WithNext(nil, Step("x")))
}
