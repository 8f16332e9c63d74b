package dockerfiles

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRefIsContentAddressed(t *testing.T) {
	a, err := Ref(RayCUDA, "2.54.0")
	require.NoError(t, err)
	assert.Regexp(t, regexp.MustCompile(`^mltrain/ray-cuda:2\.54\.0-[0-9a-f]{12}$`), a)
	b, err := Ref(RayCUDA, "2.53.0")
	require.NoError(t, err)
	assert.NotEqual(t, a[len(a)-12:], b[len(b)-12:], "the Ray version is part of the hash")
	_, err = Ref("nope", "2.54.0")
	assert.ErrorContains(t, err, `"nope"`)
	assert.Len(t, names(), len(Kinds))
}
