package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDataFood11UsageErrors(t *testing.T) {
	_, _, code := run(t, "data")
	assert.Equal(t, 2, code, "data without a dataset name is a usage error")

	_, _, code = run(t, "data", "food11", "--url", "http://x/z.zip", "--zip", "z.zip")
	assert.NotEqual(t, 0, code, "--url and --zip together are refused")

	_, _, code = run(t, "data", "food11", "extra-arg")
	assert.NotEqual(t, 0, code)
}
