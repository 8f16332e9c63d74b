package plan

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// GrafanaAdminUser is Grafana's admin login (its password is random).
const GrafanaAdminUser = "admin"

// Credentials are the lab's secrets, generated once per lab and reused by
// every later command (MinIO data and Grafana's database outlive containers,
// so the secrets must too).
type Credentials struct {
	// MinIO's root user: mltrain's own (bucket and lab user creation,
	// verify, the fault exercise's reads) and the console's login; never in
	// a container but MinIO's.
	MinIOAccessKey string `json:"minio_access_key"`
	MinIOSecretKey string `json:"minio_secret_key"`
	// MinIO's lab user, limited to the bucket "ray": AWS_ACCESS_KEY_ID and
	// AWS_SECRET_ACCESS_KEY of Jupyter and the Ray nodes.
	MinIOLabAccessKey    string `json:"minio_lab_access_key"`
	MinIOLabSecretKey    string `json:"minio_lab_secret_key"`
	GrafanaAdminPassword string `json:"grafana_admin_password"`
	JupyterToken         string `json:"jupyter_token"`
	RayAuthToken         string `json:"ray_auth_token"`
}

// Secrets lists the non-empty secrets: what no file meant to leave the
// state dir (a backup, a saved report) may hold.
func (c Credentials) Secrets() []string {
	var out []string
	for _, s := range []string{c.MinIOAccessKey, c.MinIOSecretKey, c.MinIOLabAccessKey, c.MinIOLabSecretKey, c.GrafanaAdminPassword, c.JupyterToken, c.RayAuthToken} {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Validate reports a missing secret.
func (c Credentials) Validate() error {
	for _, f := range []struct{ name, v string }{
		{"minio_access_key", c.MinIOAccessKey},
		{"minio_secret_key", c.MinIOSecretKey},
		{"minio_lab_access_key", c.MinIOLabAccessKey},
		{"minio_lab_secret_key", c.MinIOLabSecretKey},
		{"grafana_admin_password", c.GrafanaAdminPassword},
		{"jupyter_token", c.JupyterToken},
		{"ray_auth_token", c.RayAuthToken},
	} {
		if f.v == "" {
			return fmt.Errorf("%w: %s is empty", errNoCreds, f.name)
		}
	}
	return nil
}

// GenerateCredentials makes fresh random secrets (crypto/rand). The
// alphabets avoid characters that Compose interpolation ($) or shells treat
// specially: base32 for keys and passwords, hex for tokens.
func GenerateCredentials() Credentials {
	var c Credentials
	Fill(&c)
	return c
}

// fill sets only empty fields, so it also completes an older file.
func Fill(c *Credentials) bool {
	changed := false
	set := func(p *string, v string) {
		if *p == "" {
			*p, changed = v, true
		}
	}
	set(&c.MinIOAccessKey, rand.Text()[:20])
	set(&c.MinIOSecretKey, rand.Text()+rand.Text()[:14])
	// MinIO accepts access keys of 3-20 characters and secrets of 8-40.
	set(&c.MinIOLabAccessKey, "lab"+rand.Text()[:17])
	set(&c.MinIOLabSecretKey, rand.Text()+rand.Text()[:14])
	set(&c.GrafanaAdminPassword, rand.Text())
	set(&c.JupyterToken, randHex(24))
	set(&c.RayAuthToken, randHex(32))
	return changed
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go >= 1.24)
	return hex.EncodeToString(b)
}
