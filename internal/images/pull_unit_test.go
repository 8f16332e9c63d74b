package images

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker"
)

// What Docker 20.10 reported pulling an 8 MiB layer from the test registry
// killed at 3 MiB and started again within the engine's retry (as
// TestPullBrokenOffMidLayerResumes does): after the break it counts down,
// then resumes with a range request and reports the rest only, from zero.
var brokenPull = []docker.PullProgress{
	{Layer: "1a6a", Status: "Pulling fs layer"},
	{Layer: "6e5c", Status: "Pulling fs layer"},
	{Layer: "1a6a", Status: "Downloading", Current: 127, Total: 127},
	{Layer: "1a6a", Status: "Download complete"},
	{Layer: "6e5c", Status: "Downloading", Current: 97885, Total: 8391306},
	{Layer: "1a6a", Status: "Pull complete"},
	{Layer: "6e5c", Status: "Downloading", Current: 3157000, Total: 8391306},
	{Layer: "6e5c", Status: "Retrying in 5 seconds"},
	{Layer: "6e5c", Status: "Retrying in 4 seconds"},
	{Layer: "6e5c", Status: "Retrying in 1 second"},
	{Layer: "6e5c", Status: "Downloading", Current: 65058, Total: 5234306},
	{Layer: "6e5c", Status: "Downloading", Current: 4000000, Total: 5234306},
	{Layer: "6e5c", Status: "Verifying Checksum"},
	{Layer: "6e5c", Status: "Download complete"},
	{Layer: "6e5c", Status: "Extracting", Current: 98304, Total: 8391306},
	{Layer: "6e5c", Status: "Pull complete"},
}

func TestLayerSizesCountAResumedDownloadOnFromWhereItBroke(t *testing.T) {
	l := newLayerSizes()
	var last, lastTotal int64
	var said []string
	for _, p := range brokenPull {
		cur, total, ok := l.update(p)
		if wait, retry := l.retrying(p); retry {
			said = append(said, wait)
		}
		if !ok {
			continue
		}
		assert.GreaterOrEqual(t, cur, last, "the amount never goes back (%+v)", p)
		assert.GreaterOrEqual(t, total, lastTotal, "the image's size only grows, as layers are sized (%+v)", p)
		last, lastTotal = cur, total
	}
	assert.EqualValues(t, 127+8391306, last)
	assert.EqualValues(t, 127+8391306, lastTotal, "the sum of the layers' whole sizes")
	assert.Equal(t, []string{"5 seconds"}, said, "the engine's countdown is said once per break")
	cur, _, _ := newLayerSizes().update(docker.PullProgress{Layer: "x", Status: "Downloading", Current: 5, Total: 10})
	assert.EqualValues(t, 5, cur)
}

func TestTypedNamesTheImageTagOrRegistry(t *testing.T) {
	cases := []struct {
		ref, msg string
		want     error
	}{
		{"127.0.0.1:5000/a/b:v1", "Error response from daemon: manifest for 127.0.0.1:5000/a/b:v1 not found: manifest unknown: manifest unknown",
			&TagNotFoundError{Image: "127.0.0.1:5000/a/b", Tag: "v1"}},
		{"minio/minio", "manifest for minio/minio:latest not found: manifest unknown", &TagNotFoundError{Image: "minio/minio", Tag: "latest"}},
		{"r.example/x@sha256:" + sixtyFour, "manifest unknown", &TagNotFoundError{Image: "r.example/x", Tag: "sha256:" + sixtyFour}},
		{"127.0.0.1:5999/a:v1", `Get "http://127.0.0.1:5999/v2/": dial tcp 127.0.0.1:5999: connect: connection refused`,
			&RegistryUnreachableError{Registry: "127.0.0.1:5999", Reason: "connect: connection refused"}},
		{"r.example/a:v1", `Get "https://r.example/v2/": dial tcp 10.1.2.3:443: i/o timeout`,
			&RegistryUnreachableError{Registry: "r.example", Reason: "i/o timeout"}},
		{"r.example/a:v1", "Get \"https://r.example/v2/\": dial tcp: lookup r.example on 10.0.0.53:53: no such host", nil},
		{"r.example/a:v1", "received unexpected HTTP status: 500 Internal Server Error", nil},
		{"r.example/a:v1", "filesystem layer verification failed: blob unknown: blob not found", nil},
	}
	for _, c := range cases {
		err := typed(c.ref, errors.New(c.msg))
		switch want := c.want.(type) {
		case *TagNotFoundError:
			var got *TagNotFoundError
			if assert.ErrorAs(t, err, &got, c.msg) {
				assert.Equal(t, want.Image, got.Image)
				assert.Equal(t, want.Tag, got.Tag)
			}
		case *RegistryUnreachableError:
			var got *RegistryUnreachableError
			if assert.ErrorAs(t, err, &got, c.msg) {
				assert.Equal(t, want.Registry, got.Registry)
				assert.Equal(t, want.Reason, got.Reason)
			}
		default:
			assert.Equal(t, c.msg, err.Error(), "left as the engine said it")
			assert.NotErrorAs(t, err, new(*TagNotFoundError))
			assert.NotErrorAs(t, err, new(*RegistryUnreachableError))
		}
	}
}

const sixtyFour = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestRegistryOfAnImage(t *testing.T) {
	for ref, want := range map[string][2]string{
		"grafana/grafana:12.1.1":                      {"registry-1.docker.io", "registry-1.docker.io:443"},
		"rayproject/ray:2.54.0-py312-gpu":             {"registry-1.docker.io", "registry-1.docker.io:443"},
		"quay.io/jupyter/pytorch-notebook:2025":       {"quay.io", "quay.io:443"},
		"127.0.0.1:5000/mltrain-test/a:v1":            {"127.0.0.1:5000", "127.0.0.1:5000"},
		"nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04": {"nvcr.io", "nvcr.io:443"},
	} {
		reg, addr, err := Registry(ref)
		require.NoError(t, err, ref)
		assert.Equal(t, want, [2]string{reg, addr}, ref)
	}
	_, _, err := Registry("not a ref")
	assert.Error(t, err)
}
