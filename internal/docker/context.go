package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ResolveHost returns the engine address the docker CLI would use, or "" for
// the SDK default: DOCKER_HOST wins; then DOCKER_CONTEXT or the config's
// currentContext, read from the context store (~/.docker/contexts/meta).
func ResolveHost() (string, error) {
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		return h, nil
	}
	cfgDir := os.Getenv("DOCKER_CONFIG")
	if cfgDir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", nil
		}
		cfgDir = filepath.Join(home, ".docker")
	}
	name := os.Getenv("DOCKER_CONTEXT")
	if name == "" {
		b, err := os.ReadFile(filepath.Join(cfgDir, "config.json"))
		if err != nil {
			return "", nil // no config: the default socket
		}
		var cfg struct {
			CurrentContext string `json:"currentContext"`
		}
		if err := json.Unmarshal(b, &cfg); err != nil {
			return "", fmt.Errorf("read docker config %s: %w", filepath.Join(cfgDir, "config.json"), err)
		}
		name = cfg.CurrentContext
	}
	if name == "" || name == "default" {
		return "", nil
	}
	sum := sha256.Sum256([]byte(name))
	meta := filepath.Join(cfgDir, "contexts", "meta", hex.EncodeToString(sum[:]), "meta.json")
	b, err := os.ReadFile(meta)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("docker context %q has no metadata at %s (run 'docker context ls')", name, meta)
	}
	if err != nil {
		return "", fmt.Errorf("read docker context %q: %w", name, err)
	}
	var m struct {
		Endpoints map[string]struct {
			Host string `json:"Host"`
		} `json:"Endpoints"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return "", fmt.Errorf("parse docker context %q (%s): %w", name, meta, err)
	}
	return m.Endpoints["docker"].Host, nil
}
