package ports_test

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mltrain/mltrain/internal/docker"
	"github.com/mltrain/mltrain/internal/ports"
)

func TestFreeSeesAListener(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	assert.Error(t, ports.Free("127.0.0.1", port), "a port with a listener is taken")
	assert.Error(t, ports.Free("", port), "every address includes the listener's")
	require.NoError(t, l.Close())
	assert.NoError(t, ports.Free("127.0.0.1", port))
	assert.NoError(t, ports.Free("", port))
}

func TestHolderIsTheContainerPublishingTheTCPPort(t *testing.T) {
	cs := []docker.Container{
		{Name: "dns", Ports: []docker.Port{{HostPort: 8265, Proto: "udp"}}},
		{Name: "other", Ports: []docker.Port{{HostPort: 3000, Proto: "tcp"}}},
		{Name: "dash", Ports: []docker.Port{{HostPort: 9001}, {HostPort: 8265, Proto: "tcp"}}},
	}
	c, ok := ports.Holder(cs, 8265)
	require.True(t, ok)
	assert.Equal(t, "dash", c.Name, "a UDP port of the same number holds no TCP port")
	c, ok = ports.Holder(cs, 9001)
	require.True(t, ok, "no protocol is TCP")
	assert.Equal(t, "dash", c.Name)
	_, ok = ports.Holder(cs, 8888)
	assert.False(t, ok)
}
