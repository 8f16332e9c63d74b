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
	assert.Equal(t, []string{"b"}, lines, "a redraw never goes above the screen")
	assert.Equal(t, 1, redraws)

	lines, _ = Screen("plain\n\x1b[31mred\n")
	assert.Equal(t, []string{"plain", "\x1b[31mred"}, lines, "other sequences are left for the caller")
}

// A terminal echoes "^C" where the cursor is, below the rows: the next
// redraw moves up keeping that column, so the row's first two cells stay
// until a later redraw from column 0 erases them.
func TestScreenEchoBetweenRedraws(t *testing.T) {
	out := "⠸ load 1s\r\n^C\x1b[1A\x1b[J⠼ load 1s\r\n"
	lines, _ := Screen(out)
	assert.Equal(t, []string{"⠸ ⠼ load 1s"}, lines)

	lines, _ = Screen(out + "\x1b[1A\x1b[J✗ load: cancelled\r\n")
	assert.Equal(t, []string{"✗ load: cancelled"}, lines)

	lines, _ = Screen("abc\rX\n")
	assert.Equal(t, []string{"Xbc"}, lines)
}
