package images

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckPinnedRejectsLatestAndUntagged(t *testing.T) {
	assert.ErrorContains(t, CheckPinned("rayproject/ray"), "no tag")
	assert.ErrorContains(t, CheckPinned("quay.io/jupyter/pytorch-notebook:latest"), "latest")
	assert.ErrorContains(t, CheckPinned("Bad Ref"), "not a valid reference")
	assert.NoError(t, CheckPinned("minio/minio:RELEASE.2025-09-07T16-13-09Z"))
	assert.NoError(t, CheckPinned("busybox@sha256:"+strings.Repeat("a", 64)))
}

func TestBaseImagesResolvesArgs(t *testing.T) {
	df := []byte(`# comment
ARG BASE=alpine
ARG TAG
ARG V=1.2
FROM --platform=linux/amd64 ${BASE}:${V} AS build
ARG V=9.9
RUN echo \
  # a comment inside a continuation
  hi
FROM build
FROM scratch
FROM $BASE:${TAG:-3.20}
`)
	got, err := BaseImages(df, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"alpine:1.2", "alpine:3.20"}, got)

	got, err = BaseImages(df, map[string]string{"V": "2.0", "TAG": "3.21"})
	require.NoError(t, err)
	assert.Equal(t, []string{"alpine:2.0", "alpine:3.21"}, got)

	_, err = BaseImages([]byte("ARG IMG\nFROM ${IMG}\n"), nil)
	assert.ErrorContains(t, err, "$IMG")
}
