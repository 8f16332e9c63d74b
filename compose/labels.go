package compose

// Labels compose itself puts on what it creates; mltrain uses the same keys so
// `docker compose -p <project> ps|logs|down` understands the lab, and so the
// lab's state can be rebuilt from the engine alone (k3d-style).
const (
	LabelProject     = "com.docker.compose.project"
	LabelService     = "com.docker.compose.service"
	LabelNumber      = "com.docker.compose.container-number"
	LabelOneoff      = "com.docker.compose.oneoff"
	LabelConfigHash  = "com.docker.compose.config-hash"
	LabelVersion     = "com.docker.compose.version"
	LabelImage       = "com.docker.compose.image"
	LabelDependsOn   = "com.docker.compose.depends_on"
	LabelNetwork     = "com.docker.compose.network"
	LabelVolume      = "com.docker.compose.volume"
	LabelWorkingDir  = "com.docker.compose.project.working_dir"
	LabelConfigFiles = "com.docker.compose.project.config_files"
	// LabelManagedBy tells mltrain's objects from compose's own.
	LabelManagedBy = "mltrain.managed-by"
)

// composeVersion is what LabelVersion carries: compose v2 reads it to decide
// label formats; mltrain writes the format of compose 2.x.
const composeVersion = "2.29.0"
