package lab

import (
	"fmt"
	"net"

	"github.com/mltrain/mltrain/dockerfiles"
	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/store"
)

// MakeJoinBundle is the bundle of the lab kept in d: `mltrain join-token`.
// The lab must have been brought up with --allow-join.
func (d StateDir) MakeJoinBundle() (JoinBundle, error) {
	st, err := d.State()
	if err != nil {
		return JoinBundle{}, err
	}
	p := st.Plan
	if p.Joined != nil {
		return JoinBundle{}, clierr.Hintf("run 'mltrain join-token' on the lab's first host", "this host joined lab %q: its join line comes from the lab's first host", p.Joined.Lab)
	}
	if p.Network != NetworkHost {
		return JoinBundle{}, clierr.WithNext(fmt.Errorf("lab %q does not accept other hosts: it was brought up without --allow-join", p.Project), clierr.Next{
			Text:     "run '%s' first (it restarts the Ray nodes on the host network), then '%s'",
			Commands: [][]string{{"up", "--allow-join"}, {"join-token"}}})
	}
	c, err := d.Credentials()
	if err != nil {
		return JoinBundle{}, err
	}
	kind := dockerfiles.WorkerKind(string(p.Vendor))
	hash, err := dockerfiles.Hash(kind, p.RayVersion)
	if err != nil {
		return JoinBundle{}, err
	}
	host := p.rayHost()
	return JoinBundle{Lab: p.Project, HeadIP: p.NodeIP, GCSPort: p.Ports[PortGCS], Dashboard: p.Ports[PortDashboard], RayToken: c.RayAuthToken,
		MinIO:  "http://" + net.JoinHostPort(host, fmt.Sprint(p.Ports[PortMinIOAPI])),
		Bucket: store.DefaultBucket, S3Access: c.MinIOLabAccessKey, S3Secret: c.MinIOLabSecretKey,
		RayVersion: p.RayVersion, Python: dockerfiles.PythonVersion, ImageHash: hash, ImageKind: string(kind), PortBase: p.RayPortBase}, nil
}
