package main

import (
	"context"
	"fmt"

	"github.com/mltrain/mltrain/internal/clierr"
	"github.com/mltrain/mltrain/internal/docker"
)

// connectEngine opens the engine as the docker CLI would; when it cannot,
// the hint names what pointed mltrain at it (DOCKER_HOST, a docker context)
// and how to undo that, or says to start Docker, then to run doctor on
// this lab.
func (a *app) connectEngine(ctx context.Context) (docker.Engine, error) {
	e, err := docker.Connect(ctx)
	if err != nil {
		return nil, clierr.WithHint(err, engineHint(a.lab().Line("doctor")))
	}
	return e, nil
}

func engineHint(doctor string) string {
	then := "; then run '" + doctor + "'"
	ep, err := docker.ResolveEndpoint()
	if err != nil && ep.Context != "" { // a context that does not exist or cannot be read
		undo := "run 'docker context use default'"
		if ep.Source == docker.SourceEnvCtx {
			undo = "'unset DOCKER_CONTEXT'"
		}
		return fmt.Sprintf("%s to use this host's Docker, or pick a context that exists ('docker context ls')%s", undo, then)
	}
	switch ep.Source {
	case docker.SourceEnvHost:
		return fmt.Sprintf("DOCKER_HOST=%s points mltrain at that engine: start it or fix DOCKER_HOST, or 'unset DOCKER_HOST' to use this host's Docker%s", ep.Host, then)
	case docker.SourceEnvCtx:
		return fmt.Sprintf("DOCKER_CONTEXT=%s points mltrain at %s: start that engine, or 'unset DOCKER_CONTEXT' to use this host's Docker%s",
			ep.Context, orUnknown(ep.Host), then)
	case docker.SourceConfig:
		return fmt.Sprintf("the current docker context %q points mltrain at %s: start that engine, or run 'docker context use default' to use this host's Docker%s",
			ep.Context, orUnknown(ep.Host), then)
	}
	return "start Docker ('sudo systemctl start docker')" + then
}

func orUnknown(host string) string {
	if host == "" {
		return "an engine it cannot name"
	}
	return host
}
