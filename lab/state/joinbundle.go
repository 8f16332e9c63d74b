package state

import (
	"fmt"
	"net"

	"github.com/mltrain/mltrain/dockerfiles"
	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/store"
	"github.com/mltrain/mltrain/lab/plan"
	"github.com/mltrain/mltrain/lab/service"
)

// MakeJoinBundle is the bundle of the lab kept in d: `mltrain join-token`.
// The lab must have been brought up with --allow-join.
func (d Dir) MakeJoinBundle() (plan.JoinBundle, error) {
	st, err := d.State()
	if err != nil {
		return plan.JoinBundle{}, err
	}
	p := st.Plan
	if p.Joined != nil {
		return plan.JoinBundle{}, clierr.Hintf("run 'mltrain join-token' on the lab's first host", "this host joined lab %q: its join line comes from the lab's first host", p.Joined.Lab)
	}
	if p.Network != plan.NetworkHost {
		return plan.JoinBundle{}, clierr.WithNext(fmt.Errorf("lab %q does not accept other hosts: it was brought up without --allow-join", p.Project), clierr.Next{
			Text:     "run '%s' first (it restarts the Ray nodes on the host network), then '%s'",
			Commands: [][]string{{"up", "--allow-join"}, {"join-token"}}})
	}
	c, err := d.Credentials()
	if err != nil {
		return plan.JoinBundle{}, err
	}
	kind := dockerfiles.WorkerKind(string(p.Vendor))
	hash, err := dockerfiles.Hash(kind, p.RayVersion)
	if err != nil {
		return plan.JoinBundle{}, err
	}
	host := p.RayHost()
	return plan.JoinBundle{Lab: p.Project, HeadIP: p.NodeIP, GCSPort: p.Ports[service.PortGCS], Dashboard: p.Ports[service.PortDashboard], RayToken: c.RayAuthToken,
		MinIO:  "http://" + net.JoinHostPort(host, fmt.Sprint(p.Ports[service.PortMinIOAPI])),
		Bucket: store.DefaultBucket, S3Access: c.MinIOLabAccessKey, S3Secret: c.MinIOLabSecretKey,
		RayVersion: p.RayVersion, Python: dockerfiles.PythonVersion, ImageHash: hash, ImageKind: string(kind), PortBase: p.RayPortBase}, nil
}
