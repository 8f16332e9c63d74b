package compose

import (
	"context"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoadWithoutComposeFile(t *testing.T) {
	_, err := Load(context.Background(), t.TempDir())
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrNotRendered)
	assert.Contains(t, err.Error(), "compose.yaml does not exist")
}

func TestCheckPorts(t *testing.T) {
	mk := func(ip, pub string) types.ServiceConfig {
		s := types.ServiceConfig{}
		s.Ports = []types.ServicePortConfig{{HostIP: ip, Target: 80, Published: pub, Protocol: "tcp"}}
		return s
	}
	for _, tc := range []struct {
		a, b    types.ServiceConfig
		clashes bool
	}{
		{mk("0.0.0.0", "80"), mk("127.0.0.1", "80"), true},
		{mk("", "80"), mk("10.0.0.1", "80"), true},
		{mk("127.0.0.1", "80"), mk("10.0.0.1", "80"), false},
		{mk("127.0.0.1", "80"), mk("127.0.0.1", "81"), false},
		{mk("0.0.0.0", "8000-8010"), mk("0.0.0.0", "8005"), true},
		{mk("0.0.0.0", ""), mk("0.0.0.0", ""), false},
	} {
		err := CheckPorts(&types.Project{Services: types.Services{"a": tc.a, "b": tc.b}})
		assert.Equal(t, tc.clashes, err != nil, "%+v / %+v: %v", tc.a.Ports, tc.b.Ports, err)
	}
}
