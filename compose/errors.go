package compose

import "errors"

// What went wrong, for the layer that knows which command the user ran to
// say what to do next (errors.Is); the errors' messages name the objects.
var (
	// ErrNotRendered: the state dir has no compose.yaml.
	ErrNotRendered = errors.New("compose file not rendered")
	// ErrImageMissing: a service's image is not on this host.
	ErrImageMissing = errors.New("image not on this host")
	// ErrPortTaken: a host port a service publishes is held by another
	// container or process.
	ErrPortTaken = errors.New("host port taken")
	// ErrNoGPURuntime: the engine cannot give a container its GPU.
	ErrNoGPURuntime = errors.New("engine has no GPU runtime")
)
