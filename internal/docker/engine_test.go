package docker

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNVIDIAPlumbing(t *testing.T) {
	assert.Equal(t, "", Info{Runtimes: []string{"runc"}}.NVIDIAPlumbing())
	assert.Contains(t, Info{Runtimes: []string{"nvidia", "runc"}}.NVIDIAPlumbing(), "'nvidia' runtime")
	got := Info{Runtimes: []string{"runc"}, CDIDevices: []string{"nvidia.com/gpu=1", "amd.com/gpu=0", "nvidia.com/gpu=0"}}.NVIDIAPlumbing()
	assert.Equal(t, "NVIDIA CDI devices: nvidia.com/gpu=0, nvidia.com/gpu=1", got)
}
