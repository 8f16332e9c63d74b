package lab

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mltrain/mltrain/internal/clierr"
)

// CredentialsFile is the name of the credentials file in the state dir.
const CredentialsFile = "credentials.json"

// GrafanaAdminUser is Grafana's admin login (its password is random).
const GrafanaAdminUser = "admin"

// Credentials are the lab's secrets, generated once per lab and reused by
// every later command (MinIO data and Grafana's database outlive containers,
// so the secrets must too).
type Credentials struct {
	MinIOAccessKey       string `json:"minio_access_key"` // MinIO root user, also AWS_ACCESS_KEY_ID
	MinIOSecretKey       string `json:"minio_secret_key"` // MinIO root password, also AWS_SECRET_ACCESS_KEY
	GrafanaAdminPassword string `json:"grafana_admin_password"`
	JupyterToken         string `json:"jupyter_token"`
	RayAuthToken         string `json:"ray_auth_token"`
}

// Validate reports a missing secret.
func (c Credentials) Validate() error {
	for _, f := range []struct{ name, v string }{
		{"minio_access_key", c.MinIOAccessKey},
		{"minio_secret_key", c.MinIOSecretKey},
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
	fill(&c)
	return c
}

// fill sets only empty fields, so it also completes an older file.
func fill(c *Credentials) bool {
	changed := false
	set := func(p *string, v string) {
		if *p == "" {
			*p, changed = v, true
		}
	}
	set(&c.MinIOAccessKey, rand.Text()[:20])
	set(&c.MinIOSecretKey, rand.Text()+rand.Text()[:14])
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

// EnsureStateDir creates the state dir (0700) if needed and proves it is
// writable.
func EnsureStateDir(dir string) error {
	hint := fmt.Sprintf("make %s writable ('sudo chown -R $USER %s') or choose another with --state-dir DIR", dir, dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return clierr.WithHint(fmt.Errorf("state dir %s cannot be created: %w", dir, err), hint)
	}
	f, err := os.CreateTemp(dir, ".write-test-*")
	if err != nil {
		return clierr.WithHint(fmt.Errorf("state dir %s is not writable: %w", dir, err), hint)
	}
	name := f.Name()
	f.Close()
	if err := os.Remove(name); err != nil {
		return clierr.WithHint(fmt.Errorf("state dir %s: %w", dir, err), hint)
	}
	return nil
}

// LoadOrCreateCredentials returns the lab's credentials from
// <stateDir>/credentials.json, generating and storing them (0600) the first
// time. A file readable by others is refused, not silently fixed: its
// secrets may already have leaked, and the user should know.
func LoadOrCreateCredentials(stateDir string) (Credentials, error) {
	if err := EnsureStateDir(stateDir); err != nil {
		return Credentials{}, err
	}
	path := filepath.Join(stateDir, CredentialsFile)
	c, err := readCredentials(path)
	if errors.Is(err, fs.ErrNotExist) {
		c = GenerateCredentials()
		if err := writeNew(path, c); err != nil {
			if !errors.Is(err, fs.ErrExist) {
				return Credentials{}, err
			}
			// Another mltrain created it first: use theirs.
			return readCredentials(path)
		}
		return c, nil
	}
	if err != nil {
		return Credentials{}, err
	}
	if fill(&c) { // a file from an older mltrain lacks a newer secret
		if err := replace(path, c); err != nil {
			return Credentials{}, err
		}
	}
	return c, nil
}

func readCredentials(path string) (Credentials, error) {
	st, err := os.Stat(path)
	if err != nil {
		return Credentials{}, err
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return Credentials{}, clierr.Hintf(fmt.Sprintf("chmod 600 %s", path),
			"credentials file %s has permissions %04o: others can read the lab's secrets", path, perm)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return Credentials{}, clierr.WithHint(fmt.Errorf("reading credentials %s: %w", path, err), "check the file's owner: 'ls -l "+path+"'")
	}
	var c Credentials
	if err := json.Unmarshal(b, &c); err != nil {
		return Credentials{}, clierr.WithHint(fmt.Errorf("credentials file %s is not valid JSON: %w", path, err),
			"restore it from a backup, or move it away to generate new secrets (MinIO and Grafana data made with the old ones will not accept them)")
	}
	return c, nil
}

// writeNew stores c at path only if path does not exist yet (hard link of a
// complete temp file), so concurrent first runs agree on one set.
func writeNew(path string, c Credentials) error {
	tmp, err := writeTemp(path, c)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return err
		}
		return clierr.WithHint(fmt.Errorf("storing credentials %s: %w", path, err), "check that the state dir is writable, or use --state-dir DIR")
	}
	return nil
}

func replace(path string, c Credentials) error {
	tmp, err := writeTemp(path, c)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return clierr.WithHint(fmt.Errorf("storing credentials %s: %w", path, err), "check that the state dir is writable, or use --state-dir DIR")
	}
	return nil
}

func writeTemp(path string, c Credentials) (string, error) {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".credentials-*") // mode 0600
	if err != nil {
		return "", clierr.WithHint(fmt.Errorf("storing credentials in %s: %w", filepath.Dir(path), err), "check that the state dir is writable, or use --state-dir DIR")
	}
	_, werr := f.Write(append(b, '\n'))
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("writing credentials %s: %w", f.Name(), err)
	}
	return f.Name(), nil
}
