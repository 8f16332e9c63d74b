package clierr

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestHintSurvivesWrapping(t *testing.T) {
	base := errors.New("port 8265 is taken")
	err := fmt.Errorf("up: %w", WithHint(base, "mltrain down"))
	assert.Equal(t, "mltrain down", Hint(err))
	assert.ErrorIs(t, err, base)
	assert.Equal(t, "", Hint(base))
	assert.Nil(t, WithHint(nil, "x"))
}

func TestCode(t *testing.T) {
	assert.Equal(t, 0, Code(nil))
	assert.Equal(t, ExitFailure, Code(errors.New("x")))
	err := fmt.Errorf("wrapped: %w", NotBuilt("verify", "issue #8"))
	assert.Equal(t, ExitNotBuilt, Code(err))
	assert.Contains(t, err.Error(), "mltrain verify is not built yet")
	assert.NotEmpty(t, Hint(err))
	assert.Equal(t, 3, Code(WithCode(Silent{Code: 3}, 3)))
	assert.True(t, IsSilent(fmt.Errorf("x: %w", Silent{Code: 1})))
}
