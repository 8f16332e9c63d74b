package dockerfiles

import (
	"strings"
)

// The lab's versions. Head, workers and Jupyter must run the same Ray and the
// same Python: Ray refuses nodes and drivers whose versions differ from the
// head's. The Dockerfiles' ARG defaults repeat these (a test keeps them equal).
const (
	DefaultRayVersion = "2.54.0"
	// PythonVersion is the lab's Python. rayproject/ray's untagged images are
	// 3.10, but no quay.io/jupyter/pytorch-notebook has 3.10, so the lab uses
	// the -py312 Ray images and a 3.12 Jupyter base.
	PythonVersion = "3.12"
)

// PythonTag is PythonVersion as rayproject/ray tags spell it: py312.
func PythonTag() string { return "py" + strings.ReplaceAll(PythonVersion, ".", "") }

// RayImage is the plain Ray image for rayVersion with the lab's Python: what
// the Ray head runs, and the base of the ROCm worker. The untagged-Python
// rayproject/ray:<ver> is Python 3.10 and would not match the workers.
func RayImage(rayVersion string) string {
	return "rayproject/ray:" + rayVersion + "-" + PythonTag()
}

// BuildArgs are the build arguments mltrain passes when building kind.
func BuildArgs(k Kind, rayVersion string) map[string]string {
	return map[string]string{"RAY_VERSION": rayVersion}
}
