package plan

import (
	"fmt"

	"github.com/mltrain/mltrain/dockerfiles"
	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/gpu"
	"github.com/mltrain/mltrain/internal/host"
	"github.com/mltrain/mltrain/lab/service"
)

// Joined is the lab a second host's workers joined: where its head and
// MinIO are. A plan with Joined set renders workers only.
type Joined struct {
	Lab       string `json:"lab"`
	HeadIP    string `json:"head_ip"`
	GCSPort   int    `json:"gcs_port"`
	Dashboard int    `json:"dashboard"`
	MinIO     string `json:"minio"`
	Bucket    string `json:"bucket"`
}

// JoinOptions are `mltrain join`'s choices on the second host.
type JoinOptions struct {
	Project    string // this host's project; default the lab's name
	Workers    int    // 0: one per GPU
	ShareGPU   bool
	AllowCPU   bool // a GPU-less host joins as CPU rehearsal workers only when asked
	WorkerCPUs int
	WorkerShm  int64
	DataVolume string // default food11, this host's own copy
	// WorkerImage replaces the worker image (offline hosts, tests);
	// Healthcheck replaces the workers' healthcheck (tests).
	WorkerImage string
	Healthcheck []string
}

// NewJoinPlan plans this host's workers for the lab in b: the same rules and
// modes as up (one worker per GPU pinned by UUID or render node, two on a
// shared GPU), on the host network at this host's NodeIP, in the lab's port
// layout. It is pure, like NewPlan.
func NewJoin(facts host.Facts, o JoinOptions, b JoinBundle) (Plan, error) {
	if o.Project == "" {
		o.Project = b.Lab
	}
	opts := Options{Project: o.Project, RayVersion: b.RayVersion, Workers: o.Workers, ShareGPU: o.ShareGPU,
		WorkerCPUs: o.WorkerCPUs, WorkerShm: o.WorkerShm, DataVolume: o.DataVolume}
	if o.WorkerImage != "" {
		opts.Images = map[service.Role]string{service.RoleWorker: o.WorkerImage}
	}
	if o.Healthcheck != nil {
		opts.Healthchecks = map[service.Role][]string{service.RoleWorker: o.Healthcheck}
	}
	if err := opts.Validate(); err != nil {
		return Plan{}, err
	}
	opts = opts.WithDefaults()
	if facts.CPUs < 1 || facts.MemoryBytes < 1 {
		return Plan{}, clierr.Hintf("pass the host's size, e.g. --cpus 64 --memory 256g", "this host's CPU count or memory is unknown")
	}
	if facts.NodeIP == b.HeadIP {
		return Plan{}, clierr.Hintf("run 'mltrain join' on the other host; on this one the lab's own workers already use its GPUs",
			"this host (%s) is the lab's first host", facts.NodeIP)
	}
	p := Plan{Project: opts.Project, RayVersion: b.RayVersion, DataVolume: opts.DataVolume, RenderGID: facts.RenderGID, VideoGID: facts.VideoGID,
		Joined:      &Joined{Lab: b.Lab, HeadIP: b.HeadIP, GCSPort: b.GCSPort, Dashboard: b.Dashboard, MinIO: b.MinIO, Bucket: b.Bucket},
		Credentials: Credentials{RayAuthToken: b.RayToken, MinIOLabAccessKey: b.S3Access, MinIOLabSecretKey: b.S3Secret}}
	gpus, warns, err := usableGPUs(facts.GPUs)
	if err != nil {
		return Plan{}, err
	}
	if len(gpus) == 0 && !o.AllowCPU {
		return Plan{}, clierr.Hintf("join from a host with a GPU ('mltrain gpus' shows what this one has), or add --allow-cpu to add CPU rehearsal workers",
			"this host has no usable GPU: a CPU worker would slow the lab's GPU exercises down")
	}
	p.Warnings = append(p.Warnings, warns...)
	n, err := assign(&p, gpus, opts)
	if err != nil {
		return Plan{}, err
	}
	if err := size(&p, facts, opts, n); err != nil {
		return Plan{}, err
	}
	p.Head = Head{} // the lab's head runs on its first host
	if err := p.joinImages(b, opts); err != nil {
		return Plan{}, err
	}
	if err := checkDevicesAndDriver(&p, facts, opts); err != nil {
		return Plan{}, err
	}
	if err := spanHosts(&p, facts, b.PortBase); err != nil {
		return Plan{}, err
	}
	return p, nil
}

// joinImages picks the worker image: this host's vendor's build of the
// lab's Ray version, whose content hash must be the lab's (same mltrain,
// same Dockerfile), unless the image is replaced.
func (p *Plan) joinImages(b JoinBundle, opts Options) error {
	p.Images = map[service.Role]string{}
	p.Healthchecks = map[service.Role][]string{service.RoleWorker: service.DefaultHealthcheck(service.RoleWorker)}
	if hc, ok := opts.Healthchecks[service.RoleWorker]; ok {
		p.Healthchecks[service.RoleWorker] = append([]string(nil), hc...)
	}
	if img, ok := opts.Images[service.RoleWorker]; ok {
		p.Images[service.RoleWorker] = img
		return nil
	}
	kind := dockerfiles.WorkerKind(string(p.Vendor))
	hash, err := dockerfiles.Hash(kind, b.RayVersion)
	if err != nil {
		return err
	}
	if string(kind) == b.ImageKind && hash != b.ImageHash {
		return clierr.Hintf("run the same mltrain version on both hosts (its Dockerfiles name the image), or load the lab's image: 'mltrain images save FILE' there, 'mltrain images load FILE' here, then 'mltrain join ... --image-worker REF'",
			"this mltrain builds worker image %s with content hash %s, the lab's is %s", kind, hash, b.ImageHash)
	}
	ref, err := service.DefaultImage(service.RoleWorker, b.RayVersion, p.Vendor)
	if err != nil {
		return err
	}
	p.Images[service.RoleWorker] = ref
	if p.Vendor != "" && p.Vendor != gpu.Vendor(vendorOfKind(b.ImageKind)) {
		p.Warnings = append(p.Warnings, fmt.Sprintf("this host's GPUs are %s, the lab's first host's are %s: the exercises run on either", p.Vendor, vendorOfKind(b.ImageKind)))
	}
	return nil
}

func vendorOfKind(kind string) string {
	if kind == string(dockerfiles.RayROCm) {
		return string(gpu.AMD)
	}
	return string(gpu.NVIDIA)
}
