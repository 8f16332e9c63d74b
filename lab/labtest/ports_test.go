package labtest

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/mltrain/mltrain/lab/plan"
)

func TestFreeRayPortBaseReservesEverySlotsBlock(t *testing.T) {
	base := FreeRayPortBase(t, 3)
	for s := 0; s < 3; s++ {
		p := plan.NodePorts(base, s)
		assert.FileExists(t, filepath.Join(os.TempDir(), "mltrain-test-ports", "ray-"+strconv.Itoa(p.NodeManager)))
		assert.Less(t, p.MaxWorker, 32768, "slot %d reaches the ephemeral range", s)
	}
	assert.NotEqual(t, base, FreeRayPortBase(t, 1), "a held block is not handed out again")
}
