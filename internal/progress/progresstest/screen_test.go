package progresstest

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestScreen(t *testing.T) {
	out := "\x1b[?25lfirst\r\n⠋ row a\n⠋ row b\n\x1b[2A\x1b[Jdone a\n⠙ row b\n\x1b[1A\x1b[Jdone b\nhalf\x1b[?25h"
	lines, redraws := Screen(out)
	assert.Equal(t, []string{"first", "done a", "done b", "half"}, lines)
	assert.Equal(t, 2, redraws)

	lines, redraws = Screen("a\n\x1b[5A\x1b[Jb\n")
	assert.Equal(t, []string{"b"}, lines, "a redraw never erases more than the screen holds")
	assert.Equal(t, 1, redraws)

	lines, _ = Screen("plain\n\x1b[31mred\n")
	assert.Equal(t, []string{"plain", "\x1b[31mred"}, lines, "other sequences are left for the caller")
}
