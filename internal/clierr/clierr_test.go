package clierr

import (
	"context"
	"errors"
	"fmt"
	"syscall"
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
	err := fmt.Errorf("wrapped: %w", WithCode(errors.New("bad flag"), ExitUsage))
	assert.Equal(t, ExitUsage, Code(err), "the code survives wrapping")
	assert.Equal(t, 3, Code(WithCode(Silent{Code: 3}, 3)))
	assert.True(t, IsSilent(fmt.Errorf("x: %w", Silent{Code: 1})))
}

func TestUsage(t *testing.T) {
	err := Usage(errors.New(`unknown flag: --bogus`), "mltrain up")
	assert.Equal(t, ExitUsage, Code(err))
	assert.Equal(t, "run 'mltrain up --help'", Hint(err))
	assert.Equal(t, "unknown flag: --bogus", err.Error())

	own := Usage(Hintf("e.g. 'mltrain worker stop 1'", "worker index %q is not a number", "x"), "mltrain worker")
	assert.Equal(t, "e.g. 'mltrain worker stop 1'", Hint(own), "an error's own next step is kept")
	assert.Equal(t, ExitUsage, Code(own))
	assert.Nil(t, Usage(nil, "mltrain"))
}

func TestInterrupted(t *testing.T) {
	cause := fmt.Errorf("wait for mltrain-ray-head: %w", context.Canceled)
	err := Interrupted(cause, syscall.SIGINT, "mltrain up")
	assert.Equal(t, ExitInterrupted, Code(err))
	assert.Equal(t, "interrupted: mltrain up stopped during: wait for mltrain-ray-head", err.Error())
	assert.NotContains(t, err.Error(), "context canceled")
	assert.ErrorIs(t, err, context.Canceled, "the cause stays in the chain")
	assert.Equal(t, "run 'mltrain up' again to finish: a re-run converges from whatever is in place", Hint(err))

	withHint := WithHint(fmt.Errorf("load f.zip: %w", context.Canceled), "the volume holds a partial load; it is emptied first")
	err = Interrupted(withHint, syscall.SIGTERM, "mltrain data food11")
	assert.Equal(t, 143, Code(err))
	assert.Equal(t, "the volume holds a partial load; it is emptied first; run 'mltrain data food11' again to finish: a re-run converges from whatever is in place", Hint(err))

	assert.Equal(t, "interrupted: mltrain up stopped", Interrupted(context.Canceled, syscall.SIGINT, "mltrain up").Error())
	fetch := fmt.Errorf("download of %s interrupted (%w); the partial file %s is kept and resumed next time", "http://x/f.zip", context.Canceled, "f.zip.part")
	assert.Equal(t, "interrupted: mltrain data food11 stopped during: download of http://x/f.zip interrupted; the partial file f.zip.part is kept and resumed next time",
		Interrupted(fetch, syscall.SIGINT, "mltrain data food11").Error())
}

func TestMark(t *testing.T) {
	kind := errors.New("unreachable")
	cause := errors.New("dial tcp: refused")
	err := fmt.Errorf("ray: %w", Mark(fmt.Errorf("GET /nodes: %w", cause), kind))
	assert.Equal(t, "ray: GET /nodes: dial tcp: refused", err.Error(), "the message is the error's own")
	assert.ErrorIs(t, err, kind)
	assert.ErrorIs(t, err, cause, "the cause stays in the chain")
	assert.NotErrorIs(t, errors.New("x"), kind)
	assert.Nil(t, Mark(nil, kind))
}
