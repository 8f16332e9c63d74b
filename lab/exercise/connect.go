package exercise

import (
	"maps"
	"os"

	"github.com/mltrain/mltrain/internal/ray"
	"github.com/mltrain/mltrain/internal/store"
	"github.com/mltrain/mltrain/lab/nextstep"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/state"
)

// Sources are where the exercises find Ray and MinIO, in this order: the
// command's flags, Ray's and AWS's own environment variables, then the lab
// in the state dir.
type Sources struct {
	RayAddress    string // --ray-address
	RayToken      string // --ray-token
	MinIOEndpoint string // --minio-endpoint
	Workspace     string
	JobEnv        map[string]string // --job-env, over the lab's own
	// Getenv reads the environment (os.Getenv when nil).
	Getenv func(string) string
}

// Connect is the exercises' Env for the lab cmds names: its clients are built
// once (state.Dir.Connect) and a flag or variable replaces only the client
// it names. A lab in CPU rehearsal runs its jobs with
// MLTRAIN_ACCELERATOR=cpu: the driver runs on the head and must train on
// the CPU too (gloo, not NCCL). The engine is the caller's to add.
func Connect(cmds nextstep.Commands, src Sources) (Env, error) {
	dir := cmds.Dir()
	getenv := src.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	env := Env{Project: cmds.Project, StateDir: dir, Workspace: src.Workspace, Commands: cmds}
	var lc state.Clients
	if _, err := os.Stat(dir.File(state.StateFile)); err == nil {
		// The lab is here: its credentials must be too (never minted anew).
		if lc, err = dir.Connect(); err != nil {
			return Env{}, err
		}
		env.Ray, env.Store, env.NodeIP, env.Mode = lc.Ray, lc.Store, lc.Plan.NodeIP, lc.Plan.Mode
		if lc.Plan.Mode == plan.ModeCPU {
			env.JobEnv = map[string]string{"MLTRAIN_ACCELERATOR": plan.AccelCPU}
		}
	}
	addr := firstSet(src.RayAddress, getenv(ray.EnvAddress))
	token, source := src.RayToken, "--ray-token"
	if token == "" {
		token, source = getenv(ray.EnvToken), ray.EnvToken
	}
	if env.Ray == nil || addr != "" || token != "" {
		if token == "" && lc.Creds.RayAuthToken != "" {
			token, source = lc.Creds.RayAuthToken, dir.File(state.CredentialsFile)
		}
		rc, err := ray.New(ray.Options{Address: firstSet(addr, lc.Probes.Ray), Token: token, TokenSource: source})
		if err != nil {
			return Env{}, err
		}
		env.Ray = rc
	}
	if len(src.JobEnv) > 0 {
		jobEnv := map[string]string{}
		maps.Copy(jobEnv, env.JobEnv)
		maps.Copy(jobEnv, src.JobEnv)
		env.JobEnv = jobEnv
	}
	endpoint := firstSet(src.MinIOEndpoint, getenv("AWS_ENDPOINT_URL"))
	access, secret := getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY")
	if endpoint != "" || access != "" || secret != "" {
		endpoint = firstSet(endpoint, lc.Probes.MinIO)
		access = firstSet(access, lc.Creds.MinIOAccessKey)
		secret = firstSet(secret, lc.Creds.MinIOSecretKey)
		env.Store = nil
		if endpoint != "" && access != "" && secret != "" {
			sc, err := store.New(store.Config{Endpoint: endpoint, AccessKey: access, SecretKey: secret})
			if err != nil {
				return Env{}, err
			}
			env.Store = sc
		}
	}
	return env, nil
}

// RayAddressGiven is where the guide tells students Ray is: --ray-address, else
// RAY_ADDRESS.
func (s Sources) RayAddressGiven() string {
	getenv := s.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	return firstSet(s.RayAddress, getenv(ray.EnvAddress))
}

func firstSet(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
