package plan

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"strings"

	"github.com/mltrain/mltrain/internal/clierr"
)

// bundlePrefix opens every join bundle: the format and its version, so a
// bundle from another mltrain is recognised and refused by name.
const bundlePrefix = "mltrain-join-v1."

// JoinBundle is what a second host needs to add its GPUs to a lab, and
// nothing more: where the head and MinIO are, the secrets that let its
// workers in (the Ray token and MinIO's bucket-limited user, never MinIO's
// root), and what its worker image must match. It is a secret: printed only
// by `mltrain join-token`, never in events or logs.
type JoinBundle struct {
	Lab        string `json:"lab"`           // the first host's project
	HeadIP     string `json:"head_ip"`       // the address Ray's nodes reach the head at
	GCSPort    int    `json:"gcs_port"`      // the head's GCS
	Dashboard  int    `json:"dashboard"`     // the head's dashboard (Jobs API, node list)
	RayToken   string `json:"ray_token"`     // RAY_AUTH_TOKEN of every node
	MinIO      string `json:"minio"`         // S3 endpoint for checkpoints, http://IP:PORT
	Bucket     string `json:"bucket"`        // the checkpoint bucket
	S3Access   string `json:"s3_access"`     // the bucket-limited MinIO user
	S3Secret   string `json:"s3_secret"`     //
	RayVersion string `json:"ray_version"`   // every node runs exactly this Ray
	Python     string `json:"python"`        // and this Python (major.minor, the images' label)
	ImageHash  string `json:"image_hash"`    // content hash of the lab's worker image
	ImageKind  string `json:"image_kind"`    // ray-cuda or ray-rocm: what ImageHash names
	PortBase   int    `json:"ray_port_base"` // the lab's Ray port layout on every host
}

// Encode is the bundle as one pasteable token.
func (b JoinBundle) Encode() string {
	raw, _ := json.Marshal(b) // a struct of strings and ints always marshals
	return bundlePrefix + base64.RawURLEncoding.EncodeToString(raw)
}

// BundleHint says where a bundle comes from, for an error about one.
const BundleHint = "copy the bundle 'mltrain join-token' prints on the lab's first host (the whole word starting mltrain-join-v1.)"

// DecodeJoinBundle reads a bundle and checks every field is usable.
func DecodeJoinBundle(s string) (JoinBundle, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, bundlePrefix) {
		what := "it does not start with " + strings.TrimSuffix(bundlePrefix, ".")
		if strings.HasPrefix(s, "mltrain-join-") {
			what = "it was made by another version of mltrain: run the same mltrain on both hosts"
		}
		return JoinBundle{}, clierr.WithCode(clierr.Hintf(BundleHint, "not a join bundle: %s", what), clierr.ExitUsage)
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(s, bundlePrefix))
	if err != nil {
		return JoinBundle{}, clierr.WithCode(clierr.Hintf(BundleHint, "the join bundle is damaged (cut or retyped?): %v", err), clierr.ExitUsage)
	}
	var b JoinBundle
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return JoinBundle{}, clierr.WithCode(clierr.Hintf(BundleHint, "the join bundle is damaged: %v", err), clierr.ExitUsage)
	}
	if err := b.validate(); err != nil {
		return JoinBundle{}, clierr.WithCode(clierr.WithHint(err, BundleHint), clierr.ExitUsage)
	}
	return b, nil
}

func (b JoinBundle) validate() error {
	ip := net.ParseIP(b.HeadIP)
	missing := []string{}
	for name, v := range map[string]string{"lab": b.Lab, "ray_token": b.RayToken, "minio": b.MinIO, "bucket": b.Bucket,
		"s3_access": b.S3Access, "s3_secret": b.S3Secret, "ray_version": b.RayVersion, "python": b.Python, "image_hash": b.ImageHash} {
		if v == "" {
			missing = append(missing, name)
		}
	}
	switch {
	case len(missing) > 0:
		return fmt.Errorf("the join bundle lacks %s", strings.Join(missing, ", "))
	case ip == nil || ip.IsUnspecified() || ip.IsLoopback():
		return fmt.Errorf("the join bundle's head address %q is not one another host can reach", b.HeadIP)
	case !validPort(b.GCSPort) || !validPort(b.Dashboard):
		return fmt.Errorf("the join bundle's head ports (%d, %d) are not ports", b.GCSPort, b.Dashboard)
	case b.PortBase < 1024:
		return fmt.Errorf("the join bundle's Ray port base %d is not usable", b.PortBase)
	}
	return nil
}

func validPort(p int) bool { return p > 0 && p < 65536 }

// GCSAddress is the head's GCS as `ray start --address` takes it.
func (b JoinBundle) GCSAddress() string { return net.JoinHostPort(b.HeadIP, fmt.Sprint(b.GCSPort)) }

// DashboardURL is the head's dashboard.
func (b JoinBundle) DashboardURL() string {
	return "http://" + net.JoinHostPort(b.HeadIP, fmt.Sprint(b.Dashboard))
}
