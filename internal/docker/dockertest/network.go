package dockertest

import (
	"context"
	"testing"

	"github.com/moby/moby/client"

	"github.com/mltrain/mltrain/internal/docker"
)

// CreateNetwork creates a bridge network named name even when one of that
// name exists (as two `docker network create` or an older mltrain's racing
// applies do) and returns its ID; it is removed when the test ends.
func CreateNetwork(t testing.TB, name string, labels map[string]string) string {
	t.Helper()
	host, err := docker.ResolveHost()
	if err != nil {
		t.Fatal(err)
	}
	opts := []client.Opt{client.FromEnv}
	if host != "" {
		opts = append(opts, client.WithHost(host))
	}
	c, err := client.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	lbl := map[string]string{TestLabel: "1"}
	for k, v := range labels {
		lbl[k] = v
	}
	r, err := c.NetworkCreate(context.Background(), name, client.NetworkCreateOptions{Driver: "bridge", Labels: lbl})
	if err != nil {
		c.Close()
		t.Fatalf("create network %s: %v", name, err)
	}
	t.Cleanup(func() {
		_, _ = c.NetworkRemove(context.Background(), r.ID, client.NetworkRemoveOptions{})
		c.Close()
	})
	return r.ID
}
