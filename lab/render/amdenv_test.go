package render

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/lab/service"
)

// An AMD worker's container sees only its own render node, as device 0. It
// gets the course's ROCm compose variables (teaching-on-testbeds/mltrain-chi
// docker/docker-compose-ray-rocm.yaml: HIP_VISIBLE_DEVICES=0 and
// ROCR_VISIBLE_DEVICES=0) and no CUDA_VISIBLE_DEVICES: Ray's amd_gpu.py
// reads HIP_VISIBLE_DEVICES, refuses ROCR_VISIBLE_DEVICES without it (and,
// before ray-project/ray#53757, with it), and raises when CUDA_VISIBLE_DEVICES
// is set and differs from HIP's (docs/ray-fidelity.md, "AMD visibility").
func TestAMDWorkersGetTheCoursesVisibilityVariablesAndNoCUDAs(t *testing.T) {
	proj := render(t, caseNamed("amd-2gpu"))
	for i := 0; i < 2; i++ {
		s, err := proj.GetService(service.WorkerService(i))
		require.NoError(t, err)
		hip, rocr := s.Environment["HIP_VISIBLE_DEVICES"], s.Environment["ROCR_VISIBLE_DEVICES"]
		require.NotNil(t, hip, "Ray's AMD accelerator manager reads HIP_VISIBLE_DEVICES")
		assert.Equal(t, "0", *hip)
		require.NotNil(t, rocr, "the course's compose sets it beside HIP's")
		assert.Equal(t, "0", *rocr)
		_, cuda := s.Environment["CUDA_VISIBLE_DEVICES"]
		assert.False(t, cuda, "a CUDA_VISIBLE_DEVICES that differs from HIP's makes Ray raise")
	}
	nv := render(t, caseNamed("nvidia-2gpu"))
	for _, s := range nv.Services {
		for _, k := range []string{"HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"} {
			_, ok := s.Environment[k]
			assert.False(t, ok, "%s on %s: AMD variables only on AMD workers", k, s.Name)
		}
	}
}
