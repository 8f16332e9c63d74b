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

// Where an engine address came from (Endpoint.Source).
const (
	SourceDefault = ""               // the SDK's default, this host's socket
	SourceEnvHost = "DOCKER_HOST"    // the DOCKER_HOST variable
	SourceEnvCtx  = "DOCKER_CONTEXT" // a context named by DOCKER_CONTEXT
	SourceConfig  = "config"         // the docker config's currentContext ('docker context use')
)

// Endpoint is the engine the docker CLI would use, and why: a dead engine's
// fix depends on what pointed at it.
type Endpoint struct {
	Host    string // "" for the SDK default
	Source  string // one of the Source constants
	Context string // the context's name, for SourceEnvCtx and SourceConfig
}

// ResolveHost returns the engine address the docker CLI would use, or "" for
// the SDK default (see ResolveEndpoint).
func ResolveHost() (string, error) {
	e, err := ResolveEndpoint()
	return e.Host, err
}

// ResolveEndpoint applies the docker CLI's rules: DOCKER_HOST wins; then
// DOCKER_CONTEXT or the config's currentContext, read from the context store
// (~/.docker/contexts/meta). The context "default" is the SDK default. A
// context that cannot be read is an error that still names it.
func ResolveEndpoint() (Endpoint, error) {
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		return Endpoint{Host: h, Source: SourceEnvHost}, nil
	}
	cfgDir := os.Getenv("DOCKER_CONFIG")
	if cfgDir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return Endpoint{}, nil
		}
		cfgDir = filepath.Join(home, ".docker")
	}
	e := Endpoint{Context: os.Getenv("DOCKER_CONTEXT"), Source: SourceEnvCtx}
	if e.Context == "" {
		e.Source = SourceConfig
		b, err := os.ReadFile(filepath.Join(cfgDir, "config.json"))
		if err != nil {
			return Endpoint{}, nil // no config: the default socket
		}
		var cfg struct {
			CurrentContext string `json:"currentContext"`
		}
		if err := json.Unmarshal(b, &cfg); err != nil {
			return Endpoint{}, fmt.Errorf("read docker config %s: %w", filepath.Join(cfgDir, "config.json"), err)
		}
		e.Context = cfg.CurrentContext
	}
	if e.Context == "" || e.Context == "default" {
		return Endpoint{}, nil
	}
	sum := sha256.Sum256([]byte(e.Context))
	meta := filepath.Join(cfgDir, "contexts", "meta", hex.EncodeToString(sum[:]), "meta.json")
	b, err := os.ReadFile(meta)
	if errors.Is(err, os.ErrNotExist) {
		return e, fmt.Errorf("docker context %q has no metadata at %s (run 'docker context ls')", e.Context, meta)
	}
	if err != nil {
		return e, fmt.Errorf("read docker context %q: %w", e.Context, err)
	}
	var m struct {
		Endpoints map[string]struct {
			Host string `json:"Host"`
		} `json:"Endpoints"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return e, fmt.Errorf("parse docker context %q (%s): %w", e.Context, meta, err)
	}
	e.Host = m.Endpoints["docker"].Host
	return e, nil
}
