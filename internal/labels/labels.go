// Package labels is the one vocabulary of the labels mltrain reads and writes
// on engine objects. The lab's state is rebuilt from these labels alone
// (k3d-style), so every package that finds a container, volume or image by
// label takes its keys from here.
package labels

// Keys Docker Compose itself puts on what it creates. mltrain writes the same
// keys so `docker compose -p <project> ps|logs|down` understands a lab.
const (
	Project     = "com.docker.compose.project"
	Service     = "com.docker.compose.service"
	Number      = "com.docker.compose.container-number"
	Oneoff      = "com.docker.compose.oneoff"
	ConfigHash  = "com.docker.compose.config-hash"
	Version     = "com.docker.compose.version"
	Image       = "com.docker.compose.image"
	DependsOn   = "com.docker.compose.depends_on"
	Network     = "com.docker.compose.network"
	Volume      = "com.docker.compose.volume"
	WorkingDir  = "com.docker.compose.project.working_dir"
	ConfigFiles = "com.docker.compose.project.config_files"
)

// ComposeVersion is what Version carries: compose v2 reads it to decide
// label formats; mltrain writes the format of compose 2.x.
const ComposeVersion = "2.29.0"

// Keys mltrain puts on its own objects.
const (
	// ManagedBy tells mltrain's objects from compose's own (value "mltrain").
	ManagedBy = "mltrain.managed-by"
	// Role is what a container does: a lab service's role (head, worker,
	// minio, prometheus, grafana, jupyter) or a helper's.
	Role = "mltrain.role"

	// Worker containers.
	WorkerIndex   = "mltrain.worker.index"    // 0, 1, ...
	Accelerator   = "mltrain.accelerator"     // cuda | rocm | cpu
	GPUUUID       = "mltrain.gpu.uuid"        // workers with a GPU
	GPUPCI        = "mltrain.gpu.pci"         // workers with a GPU (when known)
	GPURenderNode = "mltrain.gpu.render-node" // AMD workers
	GPUShared     = "mltrain.gpu.shared"      // "true" in share mode
	JoinedLab     = "mltrain.joined-lab"      // workers of a second host: the lab they joined

	// Dataset volumes and the helper containers that fill them.
	Dataset      = "mltrain.dataset"
	HelperVolume = "mltrain.helper-volume"
	HelperOwner  = "mltrain.helper-owner" // <hostname>/<pid> of the mltrain process using it

	// Images mltrain builds (the Dockerfiles set the version labels).
	ImageHash          = "mltrain.content-hash"
	ImageKind          = "mltrain.kind"
	ImageRayVersion    = "mltrain.ray.version"
	ImagePythonVersion = "mltrain.python.version"
)

// ManagedByValue is ManagedBy's value on everything mltrain creates.
const ManagedByValue = "mltrain"

// RoleWorker is Role's value on Ray worker containers.
const RoleWorker = "worker"

// Labels mltrain gives Ray's nodes (ray start --labels) when they span
// hosts: on one host network several nodes share an address, so these tell
// which container a node is and which host's lab started it.
const (
	RayNodeLab     = "mltrain.lab"     // the project on the node's own host
	RayNodeService = "mltrain.service" // the service (ray-head, ray-worker-N)
)
